/**
 * `npm run bench -- ui [--turns N] [--steps N] [--keys N] [--db PATH] [--keep] [--no-render]`
 *
 * What a researcher waits for in the UI, on a run the size of a real one:
 * - a trajectory page: `listTurns` (100 turns) through `marsrl serve`'s HTTP API, end to end, at
 *   the start, middle and end of a 1M-turn run; baseline: the same page by OFFSET in SQL;
 * - a metric series: `getSeries` of one 10k-step key, downsampled to 1000 points (min/max and
 *   LTTB) through the HTTP API; baseline: the undownsampled series; and a check that the spike
 *   planted in it survives downsampling;
 * - chart rendering: 20 dashboard-sized panels, each one series of 10k points, drawn by ECharts in
 *   Chromium with the renderer's own chart setup and option builder (src-renderer/src/charts);
 *   baselines: the same data with ECharts' defaults for a line chart, and the 600 points per
 *   series the dashboard actually draws after server-side downsampling.
 * Targets (issue 6): page < 50 ms, series < 100 ms, render < 1 s. Medians; the machines here
 * are noisy, so this is a benchmark, never a timed test.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { intFlag } from './flags';
import type { Series } from '#shared/contract';
import { openStudio } from '../src-main/app/studio';
import { benchDatabase, DATABASE_OPTIONS } from './database';
import { projectRoot } from '../src-main/engine/resources';
import type { Store } from '../src-main/engine/store';
import { Rng } from '../src-main/engine/util/rng';
import { createStudioServer } from '../src-main/server/server';
import { median } from './timing';
import { AGENTS, writeEpisode, type TurnText } from './training-rows';

const CHROMIUM = process.env.MARSRL_CHROMIUM ?? '/usr/bin/chromium';

async function timeAsync(fn: () => Promise<unknown>, repeats: number, warmup = 2): Promise<number> {
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  return median(times);
}

function timeSync(fn: () => unknown, repeats: number): number {
  const times: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
  }
  return median(times);
}

const sortText: TurnText = (agent, digits, rng) =>
  agent === 'verifier1' ? `c:1111011111 ${digits} o:0<1<2 V:${rng.next() < 0.5 ? 'ok' : 'no'}` : `c:1111011111 A:${digits.split('').sort().join('')}`;

/** Eight episodes a step (training-rows.ts), `turns` turns in all. */
function writeTurns(store: Store, runId: number, turns: number, rng: Rng): void {
  const writer = store.writer({ maxPending: 20_000, flushIntervalMs: 0 });
  const now = Date.now();
  for (let written = 0, step = 0; written < turns; step++) {
    for (let e = 0; e < 8 && written < turns; e++) written += writeEpisode(writer, runId, step, rng, now, turns - written, sortText);
  }
  writer.close();
}

/** `keys` series of `steps` points each, noisy and trending, with one spike per series. */
function writeSeries(store: Store, runId: number, steps: number, keys: string[], rng: Rng): { spikes: Map<string, number> } {
  const writer = store.writer({ maxPending: 50_000, flushIntervalMs: 0 });
  const spikes = new Map<string, number>();
  for (const key of keys) {
    const spikeAt = rng.int(Math.floor(steps * 0.1), Math.floor(steps * 0.9));
    let value = 1;
    for (let step = 0; step < steps; step++) {
      value = 0.999 * value + 0.02 * (rng.next() - 0.5);
      const v = step === spikeAt ? value + 25 : value;
      if (step === spikeAt) spikes.set(key, v);
      writer.metric({ runId, step, wallTime: step * 2.5, key, value: v });
    }
  }
  writer.close();
  return { spikes };
}

function post(agent: http.Agent, port: number, method: string, args: unknown[]): Promise<unknown> {
  const body = JSON.stringify(args);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: `/api/${method}`, method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { result?: unknown; message?: string };
          if (res.statusCode !== 200) reject(new Error(`${method}: HTTP ${res.statusCode} ${parsed.message}`));
          else resolve(parsed.result);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * A page that draws with the renderer's chart code: the entry is bundled by Vite from
 * src-renderer/src/charts (the ECharts setup and the option builder the dashboard uses).
 */
async function bundleChartPage(): Promise<string> {
  const { build } = await import('vite');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-bench-ui-page-'));
  const charts = path.relative(dir, path.join(projectRoot(), 'src-renderer', 'src', 'charts')).split(path.sep).join('/');
  const entry = path.join(dir, 'entry.ts');
  fs.writeFileSync(
    entry,
    `import { echarts } from '${charts}/echarts';
import { lineChartOption } from '${charts}/lineOption';
import { agentColor } from '${charts}/palette';

// Runs in the page. 'panels' charts in the dashboard's grid, each with one series of 'points',
// drawn with the dashboard's option builder, or (baseline) with ECharts' defaults for a line.
(window as any).benchRender = (panels: number, points: number, defaults: boolean) => {
  const host = document.getElementById('grid')!;
  host.replaceChildren();
  const data: [number, number][] = [];
  let v = 1;
  for (let i = 0; i < points; i++) { v = 0.999 * v + 0.02 * (Math.sin(i * 12.9898) * 43758.5453 % 1); data.push([i, v]); }
  const charts: any[] = [];
  const t0 = performance.now();
  return new Promise((resolve) => {
    let left = panels;
    for (let p = 0; p < panels; p++) {
      const div = document.createElement('div');
      div.className = 'panel';
      host.appendChild(div);
      const chart = echarts.init(div, undefined, { renderer: 'canvas' });
      charts.push(chart);
      chart.on('finished', () => { if (--left === 0) { const ms = performance.now() - t0; charts.forEach((c) => c.dispose()); resolve(ms); } });
      const option: any = defaults
        ? { xAxis: { type: 'value' }, yAxis: { type: 'value' }, tooltip: { trigger: 'axis' }, series: [{ type: 'line', data }] }
        : lineChartOption({ lines: [{ key: 'k', label: 'series ' + p, color: agentColor(['solver', 'verifier1', 'corrector1'][p % 3]), dashed: false }], data: new Map([['k', data]]), smoothing: 0, xAxis: 'step' });
      chart.setOption(option);
    }
  });
};
`,
  );
  const output = await build({
    configFile: false,
    logLevel: 'silent',
    root: dir,
    build: { write: false, minify: true, rollupOptions: { input: entry, output: { format: 'iife', inlineDynamicImports: true } } },
  });
  const result = Array.isArray(output) ? output[0] : output;
  const chunk = (result as { output: { type: string; code?: string }[] }).output.find((o) => o.type === 'chunk');
  fs.rmSync(dir, { recursive: true, force: true });
  if (!chunk?.code) throw new Error('could not bundle the chart page');
  return chunk.code;
}

async function measureRender(): Promise<{ tenK: number; tenKDefaults: number; downsampled: number } | string> {
  if (!fs.existsSync(CHROMIUM)) return `skipped: no Chromium at ${CHROMIUM} (set MARSRL_CHROMIUM)`;
  let playwright: typeof import('playwright-core');
  try {
    playwright = await import('playwright-core');
  } catch {
    return 'skipped: playwright-core is not installed';
  }
  const script = await bundleChartPage();
  const browser = await playwright.chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1440, height: 1400 }, deviceScaleFactor: 1 });
    // The dashboard's grid: panels of 340+ px by 248 px.
    await page.setContent(`<!doctype html><html><head><style>
      body { margin: 0; background: #111317; }
      #grid { display: grid; grid-template-columns: repeat(4, 1fr); gap: 12px; padding: 12px; }
      .panel { height: 236px; }
    </style></head><body><div id="grid"></div></body></html>`);
    await page.addScriptTag({ content: script });
    const run = async (panels: number, points: number, defaults: boolean) => {
      const times: number[] = [];
      for (let i = 0; i < 6; i++) {
        const ms = (await page.evaluate(
          ([a, b, c]) => (globalThis as unknown as { benchRender(p: number, n: number, d: boolean): Promise<number> }).benchRender(a as number, b as number, c as boolean),
          [panels, points, defaults],
        )) as number;
        if (i > 0) times.push(ms);
      }
      return median(times);
    };
    return { tenK: await run(20, 10_000, false), tenKDefaults: await run(20, 10_000, true), downsampled: await run(20, 600, false) };
  } finally {
    await browser.close();
  }
}

const verdict = (value: number, target: number) => (value < target ? `✓ under ${target} ms` : `✗ over ${target} ms`);

export async function run(argv: string[]): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      turns: { type: 'string', default: '1000000' },
      steps: { type: 'string', default: '10000' },
      keys: { type: 'string', default: '20' },
      ...DATABASE_OPTIONS,
      'no-render': { type: 'boolean', default: false },
    },
  });
  const turns = intFlag(values.turns, '--turns', 1000);
  const steps = intFlag(values.steps, '--steps', 100);
  const keyCount = Number(values.keys);
  if (!Number.isInteger(keyCount) || keyCount < 1 || keyCount > 64) throw new Error(`--keys must be an integer from 1 to 64 (got ${values.keys})`);

  const database = benchDatabase(values, 'ui');
  const dbPath = database.path;
  // The Studio `marsrl serve` opens (without runs or a watcher: nothing else writes here).
  const studio = openStudio({ databasePath: dbPath, transport: 'http' });
  const { store } = studio;
  const rng = new Rng(11, 'bench-ui');
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  let server: Awaited<ReturnType<typeof createStudioServer>> | null = null;
  try {
    const runId = store.runs.create({ name: 'bench-ui', config: {}, codeVersion: 'bench', seed: 11 });
    const t0 = performance.now();
    writeTurns(store, runId, turns, rng);
    const keys = Array.from({ length: keyCount }, (_, i) => `${AGENTS[i % 3]}/metric_${i}`);
    const { spikes } = writeSeries(store, runId, steps, keys, rng);
    console.log(`ui bench: ${turns.toLocaleString()} turns and ${keyCount} series of ${steps.toLocaleString()} steps written in ${((performance.now() - t0) / 1000).toFixed(0)} s (${dbPath})`);

    server = await createStudioServer({ service: studio.service, hub: studio.hub, port: 0, rendererDir: null, log: () => {} });
    const port = server.port;

    // --- trajectory pages --------------------------------------------------------------------
    const ids = store.db.prepare('SELECT MIN(id) AS lo, MAX(id) AS hi FROM turns WHERE run_id = ?').get(runId) as { lo: number; hi: number };
    const offsetStmt = store.db.prepare(`SELECT t.*, r.value AS reward, a.value AS advantage FROM turns t LEFT JOIN rewards r ON r.turn_id = t.id
      LEFT JOIN advantages a ON a.turn_id = t.id WHERE t.run_id = ? ORDER BY t.id LIMIT 100 OFFSET ?`);
    console.log('  trajectory page (listTurns, 100 turns, over HTTP; median of 30):');
    const pageTimes: number[] = [];
    for (const [label, cursor] of [['start', ids.lo - 1], ['middle', Math.floor((ids.lo + ids.hi) / 2)], ['end', ids.hi - 150]] as const) {
      const keyset = await timeAsync(() => post(agent, port, 'listTurns', [{ runId, afterId: cursor, limit: 100 }]), 30);
      const filtered = await timeAsync(() => post(agent, port, 'listTurns', [{ runId, afterId: cursor, limit: 100, agent: 'verifier1', correct: false }]), 30);
      const offset = timeSync(() => offsetStmt.all(runId, cursor - ids.lo + 1), 5);
      pageTimes.push(keyset, filtered);
      console.log(`    ${label.padEnd(6)} keyset ${keyset.toFixed(1).padStart(6)} ms   filtered by agent+correct ${filtered.toFixed(1).padStart(6)} ms   baseline OFFSET (SQL alone) ${offset.toFixed(1).padStart(7)} ms`);
    }
    const midEpisode = (store.db.prepare('SELECT episode_id AS e FROM turns WHERE id = ?').get(Math.floor((ids.lo + ids.hi) / 2)) as { e: number }).e;
    const episodeMs = await timeAsync(() => post(agent, port, 'getEpisode', [midEpisode]), 30);
    const episodesMs = await timeAsync(() => post(agent, port, 'listEpisodes', [{ runId, limit: 100, afterId: midEpisode }]), 30);
    console.log(`    episode tree (getEpisode, 12 turns with segments) ${episodeMs.toFixed(1)} ms   episode page (listEpisodes, 100) ${episodesMs.toFixed(1)} ms`);
    const worstPage = Math.max(...pageTimes, episodeMs, episodesMs);
    console.log(`    worst median: ${worstPage.toFixed(1)} ms  ${verdict(worstPage, 50)}`);

    // --- series -------------------------------------------------------------------------------
    const key = keys[0];
    const query = (downsample: 'minmax' | 'lttb' | 'none', maxPoints = 1000) => post(agent, port, 'getSeries', [{ runId, keys: [key], maxPoints, downsample }]) as Promise<Series[]>;
    const minmax = await timeAsync(() => query('minmax'), 30);
    const lttb = await timeAsync(() => query('lttb'), 30);
    const full = await timeAsync(() => query('none', 20_000), 30);
    const dashboard = await timeAsync(() => post(agent, port, 'getSeries', [{ runId, keys, maxPoints: 600, downsample: 'minmax' }]), 10);
    const [minmaxSeries] = await query('minmax');
    const [lttbSeries] = await query('lttb');
    const spike = spikes.get(key)!;
    const keeps = (s: Series) => s.points.some(([, y]) => y === spike);
    console.log(`  series (getSeries of one ${steps.toLocaleString()}-step key → 1000 points, over HTTP; median of 30):`);
    console.log(`    min/max ${minmax.toFixed(1).padStart(6)} ms   LTTB ${lttb.toFixed(1).padStart(6)} ms   baseline undownsampled (${steps.toLocaleString()} points) ${full.toFixed(1).padStart(6)} ms`);
    console.log(`    spike kept: min/max ${keeps(minmaxSeries) ? 'yes' : 'NO'}, LTTB ${keeps(lttbSeries) ? 'yes' : 'NO'}   (${minmaxSeries.points.length} and ${lttbSeries.points.length} points)`);
    console.log(`    a whole dashboard: ${keyCount} keys → 600 points each in one call: ${dashboard.toFixed(1)} ms`);
    console.log(`    worst median: ${Math.max(minmax, lttb).toFixed(1)} ms  ${verdict(Math.max(minmax, lttb), 100)}`);

    // --- rendering ----------------------------------------------------------------------------
    if (values['no-render']) {
      console.log('  render: skipped (--no-render)');
    } else {
      const render = await measureRender();
      if (typeof render === 'string') {
        console.log(`  render: ${render}`);
      } else {
        console.log('  render in Chromium (20 dashboard panels, renderer chart setup, until every chart reports finished; median of 5):');
        console.log(`    20 series × 10,000 points ${render.tenK.toFixed(0).padStart(6)} ms  ${verdict(render.tenK, 1000)}`);
        console.log(`    baseline, the same with ECharts' defaults for a line (symbols, animation) ${render.tenKDefaults.toFixed(0).padStart(6)} ms`);
        console.log(`    20 series × 600 points (what the dashboard draws after server-side downsampling) ${render.downsampled.toFixed(0).padStart(6)} ms`);
      }
    }
  } finally {
    agent.destroy();
    await studio.close({ edges: server ? [server] : [] });
    const kept = database.release();
    if (kept) console.log(`  database kept: ${kept}`);
  }
}
