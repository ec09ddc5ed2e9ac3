/**
 * `npm run bench -- store [--turns N] [--db PATH] [--keep]`
 *
 * Builds a database of N turns (default 1M) the way training writes it (episodes of a Solver
 * group, Verifier and Corrector turns, each with a segment, reward and advantage, through the
 * BatchWriter) and reports the insert rate, then the time of keyset pages at the start, middle
 * and end of the run, with and without filters. Baselines measured in the same run: row-at-a-
 * time autocommit inserts, and OFFSET pagination of the same pages.
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { openStore, type Store } from '../src-main/engine/store';
import { benchDatabase, DATABASE_OPTIONS } from './database';
import { Rng } from '../src-main/engine/util/rng';
import { median } from './timing';
import { writeEpisode, type TurnText } from './training-rows';

function timeIt(fn: () => void, repeats: number): number {
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = process.hrtime.bigint();
    fn();
    times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  }
  return median(times);
}

const sortedText: TurnText = (agent, digits, rng) => (agent === 'verifier1' ? `c0=1 c1=2 c3=1 ${digits} ok V:${rng.next() < 0.5 ? 'ok' : 'no'}` : `${digits.split('').sort().join('')}`);

/** Writes `turns` turns for run `runId`, an episode a step; returns the number of rows written (all tables). */
function writeTurns(store: Store, runId: number, turns: number, rng: Rng, batched: boolean): number {
  const writer = store.writer({ maxPending: batched ? 20_000 : 1, flushIntervalMs: 0 });
  const now = Date.now();
  for (let written = 0, step = 0; written < turns; step++) written += writeEpisode(writer, runId, step, rng, now, turns - written, sortedText);
  writer.close();
  return writer.rowsWritten;
}

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({ args: argv, options: { turns: { type: 'string', default: '1000000' }, ...DATABASE_OPTIONS } });
  const turns = Number(values.turns);
  if (!Number.isInteger(turns) || turns < 1000) throw new Error(`--turns must be an integer ≥ 1000 (got ${values.turns})`);
  const database = benchDatabase(values, 'store');
  const dbPath = database.path;
  const store = openStore(dbPath);
  const rng = new Rng(7, 'bench-store');
  try {
    const runId = store.runs.create({ name: 'bench', config: {}, codeVersion: 'bench', seed: 7 });

    // Baseline: the same rows, one autocommit transaction per row (what a naive logger does).
    const baselineTurns = 3000;
    const baseRun = store.runs.create({ name: 'bench-baseline', config: {}, codeVersion: 'bench', seed: 7 });
    const tb0 = performance.now();
    const baselineRows = writeTurns(store, baseRun, baselineTurns, rng, false);
    const baselineSeconds = (performance.now() - tb0) / 1000;

    const t0 = performance.now();
    const rows = writeTurns(store, runId, turns, rng, true);
    const seconds = (performance.now() - t0) / 1000;
    const mem = process.memoryUsage();

    console.log(`store bench: ${turns.toLocaleString()} turns (${rows.toLocaleString()} rows incl. episodes, segments, rewards, advantages) in ${dbPath}`);
    console.log(`  batched insert:       ${(turns / seconds).toFixed(0).padStart(9)} turns/s  ${(rows / seconds).toFixed(0).padStart(9)} rows/s  (${seconds.toFixed(1)} s, RSS ${(mem.rss / 1e6).toFixed(0)} MB)`);
    console.log(`  baseline row-at-a-time:${(baselineTurns / baselineSeconds).toFixed(0).padStart(8)} turns/s  ${(baselineRows / baselineSeconds).toFixed(0).padStart(9)} rows/s  (${baselineTurns} turns)`);
    console.log(`  ratio batched / row-at-a-time: ${((turns / seconds) / (baselineTurns / baselineSeconds)).toFixed(1)}x`);
    console.log(`  database size: ${(fs.statSync(dbPath).size / 1e6).toFixed(0)} MB`);

    const ids = store.db.prepare('SELECT MIN(id) AS lo, MAX(id) AS hi FROM turns WHERE run_id = ?').get(runId) as { lo: number; hi: number };
    const positions: [string, number][] = [['start', ids.lo - 1], ['middle', Math.floor((ids.lo + ids.hi) / 2)], ['end', ids.hi - 150]];
    const offsetStmt = store.db.prepare(`SELECT t.*, r.value AS reward, a.value AS advantage FROM turns t LEFT JOIN rewards r ON r.turn_id = t.id
      LEFT JOIN advantages a ON a.turn_id = t.id WHERE t.run_id = ? ORDER BY t.id LIMIT 100 OFFSET ?`);
    console.log('  page of 100 turns (median of 30):');
    for (const [label, cursor] of positions) {
      const keyset = timeIt(() => store.trajectories.pageTurns({ runId, afterId: cursor, limit: 100 }), 30);
      const filtered = timeIt(() => store.trajectories.pageTurns({ runId, afterId: cursor, limit: 100, agent: 'verifier1' }), 30);
      const offset = timeIt(() => offsetStmt.all(runId, cursor - ids.lo + 1), 5);
      console.log(`    ${label.padEnd(6)} keyset ${keyset.toFixed(2).padStart(7)} ms   keyset+agent filter ${filtered.toFixed(2).padStart(7)} ms   OFFSET baseline ${offset.toFixed(2).padStart(8)} ms   (${(offset / keyset).toFixed(0)}x)`);
    }
    const episodeId = (store.db.prepare('SELECT episode_id AS e FROM turns WHERE id = ?').get(positions[1][1]) as { e: number }).e;
    console.log(`  episode tree (12 turns): ${timeIt(() => store.trajectories.episodeTurns(episodeId), 30).toFixed(2)} ms`);
    // A full walk proves the pages are complete and ordered at this size.
    let cursor = 0;
    let seen = 0;
    let last = 0;
    const tw = performance.now();
    for (;;) {
      const page = store.trajectories.pageTurns({ runId, afterId: cursor, limit: 1000 });
      for (const t of page.items) {
        if (t.id <= last) throw new Error('keyset walk out of order');
        last = t.id;
      }
      seen += page.items.length;
      if (page.nextCursor === null) break;
      cursor = page.nextCursor;
    }
    console.log(`  full keyset walk: ${seen.toLocaleString()} turns in ${((performance.now() - tw) / 1000).toFixed(1)} s (${seen === turns ? 'none lost' : `MISMATCH: expected ${turns}`})`);
  } finally {
    store.close();
    database.release();
  }
}
