/**
 * The MarsRL import format against outputs written by MarsRL's own code
 * (test/fixtures/imports/marsrl/make_fixture.py runs vc_reasoning_system.py and extract_solution.py
 * of github.com/liushulinle/MarsRL on scripted model replies). Expected values come from the
 * fixture's files read here with plain loops, from MarsRL's rules restated as it writes them
 * (vc_reasoning_system.py, verify_solution: `result.lower().split('correctness')[-1]` holds
 * "correct"), and from extract_solution.py's own output files — never from the reader.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { marsrlFormat } from '../../src-main/engine/imports/marsrl';
import { completeLines } from '../../src-main/engine/imports/marsrl/lines';
import { IMPORT_FORMAT_REGISTRY, importFormat } from '../../src-main/engine/imports/registry';
import { ImportSourceError, type ImportBatch, type ImportEpisode } from '../../src-main/engine/imports/types';
import { judgeMathAnswer, stopCheckerThread } from '../../src-main/engine/tasks/math-answer';

const FIXTURE = path.resolve(__dirname, '../fixtures/imports/marsrl');
const OUT = path.join(FIXTURE, 'outputs');
const temps: string[] = [];
afterAll(() => {
  for (const dir of temps) fs.rmSync(dir, { recursive: true, force: true });
  stopCheckerThread();
});

interface RawCall {
  call_reason: string;
  text: string;
  finish_reason: string;
  messages: Array<{ role: string; content: string }>;
}

/** The fixture's call files and their lines, read with a plain loop. */
function rawFiles(folder = OUT): Map<string, RawCall[]> {
  const files = new Map<string, RawCall[]>();
  for (const name of fs.readdirSync(folder).filter((n) => /^\d+\.json\.\d+$/.test(n)).sort()) {
    const lines = fs.readFileSync(path.join(folder, name), 'utf8').split('\n').filter((l) => l !== '');
    files.set(name, lines.map((l) => JSON.parse(l) as RawCall));
  }
  return files;
}

function rows(file: string): Array<Record<string, unknown>> {
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** MarsRL's verdict, restated from verify_solution: the reply after `</think>`, lowercased, after its last "correctness". */
function marsApproves(text: string): boolean {
  const reply = text.split('</think>').pop()!.toLowerCase();
  const at = reply.lastIndexOf('correctness');
  return (at === -1 ? reply : reply.slice(at + 'correctness'.length)).includes('correct');
}

async function readAll(folder: string, cursor: unknown = null, batchSize = 5000): Promise<ImportBatch[]> {
  const batches: ImportBatch[] = [];
  for await (const batch of marsrlFormat.read(folder, '.', cursor, { batchSize })) batches.push(batch);
  return batches;
}

const episodesOf = (batches: ImportBatch[]): ImportEpisode[] => batches.flatMap((b) => b.episodes);
const lastCursor = (batches: ImportBatch[], before: unknown = null): unknown => (batches.length ? batches[batches.length - 1].cursor : before);

function tempCopy(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-import-'));
  temps.push(dir);
  for (const name of fs.readdirSync(OUT)) fs.copyFileSync(path.join(OUT, name), path.join(dir, name));
  return dir;
}

describe('MarsRL import: detection and scan', () => {
  it('is in the registry and detects an output folder, not its parent, a log-only folder or an empty one', () => {
    expect(IMPORT_FORMAT_REGISTRY).toContain(marsrlFormat);
    expect(importFormat('marsrl')).toBe(marsrlFormat);
    expect(marsrlFormat.detect(OUT)).toBe(true);
    expect(marsrlFormat.detect(FIXTURE)).toBe(false);
    expect(marsrlFormat.detect(path.join(OUT, '0.json.0'))).toBe(false);
    const logs = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-logs-'));
    temps.push(logs);
    fs.writeFileSync(path.join(logs, '0_log.json.0'), '[2025-01-01 00:00:00][agent][0] begin.\n');
    expect(marsrlFormat.detect(logs)).toBe(false);
    // A worker's file is created empty before its first call returns: detection looks past it.
    fs.writeFileSync(path.join(logs, '0.json.0'), '');
    expect(marsrlFormat.detect(logs)).toBe(false);
    fs.copyFileSync(path.join(OUT, '1.json.0'), path.join(logs, '1.json.0'));
    expect(marsrlFormat.detect(logs)).toBe(true);
  });

  it('counts one episode per call file, every call, and the agents the chains unroll to', async () => {
    const files = rawFiles();
    let calls = 0;
    const agents = new Set<string>();
    for (const fileCalls of files.values()) {
      calls += fileCalls.length;
      let verifies = 0;
      for (const call of fileCalls) {
        if (call.call_reason === 'step1') agents.add('solver');
        if (call.call_reason === 'verify_solution') agents.add(`verifier${++verifies}`);
        if (call.call_reason === 'correction') agents.add(`corrector${verifies}`);
      }
    }
    const result = await marsrlFormat.scan(OUT, {});
    expect(result.files).toBe(files.size);
    expect(result.bytes).toBe([...files.keys()].reduce((sum, name) => sum + fs.statSync(path.join(OUT, name)).size, 0));
    expect(result.issues).toEqual([]);
    expect(result.runs).toHaveLength(1);
    const [run] = result.runs;
    expect(run).toMatchObject({ key: '.', name: 'outputs', episodes: files.size, generations: calls, steps: 1, firstStep: 0, lastStep: 0, metricPoints: 0 });
    expect(new Set(run.agents)).toEqual(agents);
    expect(run.agents.slice(0, 3)).toEqual(['solver', 'verifier1', 'corrector1']);
  });

  it('refuses an empty folder with a message naming it', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-empty-'));
    temps.push(empty);
    expect(marsrlFormat.detect(empty)).toBe(false);
    await expect(marsrlFormat.scan(empty, {})).rejects.toThrow(ImportSourceError);
    await expect(marsrlFormat.scan(empty, {})).rejects.toThrow(empty);
    await expect(readAll(empty)).rejects.toThrow(`no MarsRL call files (<idx>.json.<worker>, written by vc_reasoning_system.py) in ${empty}`);
  });
});

describe('MarsRL import: episode trees', () => {
  it('turns each chain into turns in file order with roles, rounds, MarsRL verdicts and the call record', async () => {
    const episodes = episodesOf(await readAll(OUT));
    const files = rawFiles();
    expect(episodes.map((e) => e.meta?.file)).toEqual([...files.keys()]);
    for (const episode of episodes) {
      const calls = files.get(String(episode.meta?.file))!;
      expect(episode.turns.map((t) => t.text)).toEqual(calls.map((c) => c.text));
      expect(episode.turns.map((t) => t.role)).toEqual(calls.map((c) => ({ step1: 'solver', verify_solution: 'verifier', correction: 'corrector' })[c.call_reason]));
      expect(episode.turns.map((t) => t.verdict)).toEqual(calls.map((c) => (c.call_reason === 'verify_solution' ? marsApproves(c.text) : null)));
      expect(episode.turns.map((t) => t.finishReason)).toEqual(calls.map((c) => c.finish_reason));
      expect(episode.turns.map((t) => t.meta.line)).toEqual(calls.map((_, k) => k + 1));
      expect(episode.turns.every((t) => t.meta.call_reason && t.meta.status_code === 0 && t.meta.worker === 0)).toBe(true);
      expect(episode.turns[episode.turns.length - 1].prompt).toContain(calls[calls.length - 1].messages[0].content);
      expect(episode).toMatchObject({ split: 'test', step: 0, group: null });
    }
  });

  it('names agents as the Studio does: retries stay the solver, each verification a round, a correction after its verifier', async () => {
    const [accepted, corrected, abandoned] = episodesOf(await readAll(OUT));
    expect(accepted.turns.map((t) => t.agent)).toEqual(['solver', 'solver', 'verifier1', 'verifier2', 'verifier3', 'verifier4']);
    expect(corrected.turns.map((t) => t.agent)).toEqual(['solver', 'verifier1', 'corrector1', 'verifier2', 'verifier3', 'verifier4', 'verifier5']);
    expect(abandoned.turns.slice(0, 5).map((t) => t.agent)).toEqual(['solver', 'verifier1', 'corrector1', 'verifier2', 'corrector2']);
    expect(abandoned.turns.map((t) => t.round)).toEqual(abandoned.turns.map((t) => Number(/\d+$/.exec(t.agent)?.[0] ?? 0)));
    // "Correctness: Incorrect" contains "correct": MarsRL counts it as an approval, and so does the import.
    expect(accepted.turns[4].text).toContain('Incorrect');
    expect(accepted.turns[4].verdict).toBe(true);
  });

  it('ends chains as MarsRL does and keys problems by the input rows; judges the last solution with the checker', async () => {
    const episodes = episodesOf(await readAll(OUT));
    const input = rows(path.join(FIXTURE, 'input.jsonl'));
    // extract_solution.py's eval_accepted.jsonl: rows whose best solution has >= 3 verifications (the accepted chains here).
    const acceptedQueries = new Set(rows(path.join(OUT, 'eval_accepted.jsonl')).map((row) => row.query));
    const files = rawFiles();
    episodes.forEach((episode, idx) => {
      const row = input[idx];
      expect(episode.problem).toMatchObject({ key: String(row.qid), question: row.query, answer: row.ans_box });
      expect(episode.meta).toMatchObject({ idx, worker: 0, data_source: row.data_source, source: row.source, accepted: acceptedQueries.has(row.query) });
      const solutions = files.get(`${idx}.json.0`)!.filter((c) => c.call_reason !== 'verify_solution' && c.finish_reason === 'stop');
      const last = solutions[solutions.length - 1].text.split('</think>').pop()!;
      const judged = judgeMathAnswer(String(row.ans_box), last);
      expect(episode.finalAnswer).toBe(judged.answer);
      expect(episode.correct).toBe(judged.correct);
    });
    expect(episodes.map((e) => [e.meta?.outcome, e.finalAnswer, e.correct])).toEqual([
      ['accepted', '70', true],
      ['accepted', '117', true],
      ['abandoned', '60', false],
    ]);
    expect(episodes[2].meta).toMatchObject({ abandoned: true, errors: 10, approvals: 0 });
  });

  it('gives each finished Solver and Corrector reply its own answer, judged: the corrected chain shows the answer changing', async () => {
    const episodes = episodesOf(await readAll(OUT));
    const input = rows(path.join(FIXTURE, 'input.jsonl'));
    const files = rawFiles();
    episodes.forEach((episode, idx) => {
      const calls = files.get(`${idx}.json.0`)!;
      episode.turns.forEach((turn, k) => {
        const call = calls[k];
        if (call.call_reason === 'verify_solution' || call.finish_reason !== 'stop') return expect(turn.answer ?? null).toBeNull();
        const judged = judgeMathAnswer(String(input[idx].ans_box), call.text.split('</think>').pop()!);
        expect([turn.answer, turn.correct]).toEqual([judged.answer, judged.correct]);
      });
    });
    const corrected = episodes[1];
    expect(corrected.turns.filter((t) => t.role !== 'verifier').map((t) => [t.agent, t.correct])).toEqual([
      ['solver', false],
      ['corrector1', true],
    ]);
  });
});

describe('MarsRL import: cursor and bad input', () => {
  it('re-reading from the cursor yields nothing; batches hold whole episodes with a cursor each', async () => {
    const batches = await readAll(OUT, null, 1);
    expect(batches.map((b) => b.episodes.length)).toEqual([1, 1, 1]);
    expect(Object.keys(batches[0].cursor as object)).toEqual(['files']);
    expect(Object.keys((batches[1].cursor as { files: object }).files)).toEqual(['0.json.0', '1.json.0']);
    expect(batches[2].bytesDone).toBe([...rawFiles().keys()].reduce((sum, name) => sum + fs.statSync(path.join(OUT, name)).size, 0));
    expect(episodesOf(await readAll(OUT, lastCursor(batches)))).toEqual([]);
  });

  it('holds a chain MarsRL is still writing (and a half-written line) until its loop ends it, then imports it once', async () => {
    const dir = tempCopy();
    const full = fs.readFileSync(path.join(dir, '1.json.0'), 'utf8');
    const lines = full.split('\n');
    const partial = `${lines.slice(0, 3).join('\n')}\n${lines[3].slice(0, 40)}`;
    fs.writeFileSync(path.join(dir, '1.json.0'), partial);
    const first = await readAll(dir);
    expect(episodesOf(first).map((e) => e.meta?.file)).toEqual(['0.json.0', '2.json.0']);
    expect(first.flatMap((b) => b.issues)).toEqual([{ file: '1.json.0', position: '', message: expect.stringContaining('not ended this chain yet (3 calls)') }]);
    fs.writeFileSync(path.join(dir, '1.json.0'), full);
    const second = await readAll(dir, lastCursor(first));
    expect(episodesOf(second).map((e) => [e.meta?.file, e.turns.length, e.meta?.outcome])).toEqual([['1.json.0', 7, 'accepted']]);
    expect(episodesOf(await readAll(dir, lastCursor(second, lastCursor(first))))).toEqual([]);
  });

  it('a grown folder yields only the new chain; a call appended after an ended chain is reported, not imported', async () => {
    const dir = tempCopy();
    const first = await readAll(dir);
    fs.copyFileSync(path.join(dir, '0.json.0'), path.join(dir, '3.json.1'));
    const stray = fs.readFileSync(path.join(dir, '2.json.0'), 'utf8').split('\n')[1];
    fs.appendFileSync(path.join(dir, '2.json.0'), `${stray}\n`);
    const second = await readAll(dir, lastCursor(first));
    expect(episodesOf(second).map((e) => [e.meta?.file, e.meta?.worker, e.problem?.key, e.turns.length])).toEqual([['3.json.1', 1, '5', 6]]);
    expect(second.flatMap((b) => b.issues)).toEqual([{ file: '2.json.0', position: 'line 23', message: expect.stringContaining('after MarsRL') }]);
    expect(episodesOf(await readAll(dir, lastCursor(second)))).toEqual([]);
  });

  it('a JSONL line cut in half is an issue naming the file and line; the rest of the chain is imported', async () => {
    const dir = tempCopy();
    const lines = fs.readFileSync(path.join(dir, '0.json.0'), 'utf8').split('\n');
    lines[2] = lines[2].slice(0, Math.floor(lines[2].length / 2));
    fs.writeFileSync(path.join(dir, '0.json.0'), lines.join('\n'));
    const batches = await readAll(dir);
    const issues = batches.flatMap((b) => b.issues);
    expect(issues).toEqual([{ file: '0.json.0', position: 'line 3', message: expect.stringContaining('not a JSON line') }]);
    const [damaged, ...rest] = episodesOf(batches);
    expect(damaged.turns.map((t) => t.meta.line)).toEqual([1, 2, 4, 5, 6]);
    expect(damaged.meta?.outcome).toBe('unknown');
    expect(rest.map((e) => e.meta?.outcome)).toEqual(['accepted', 'abandoned']);
    const scanned = await marsrlFormat.scan(dir, {});
    expect(scanned.issues).toEqual(issues);
    expect(scanned.runs[0].generations).toBe(rawFiles().get('0.json.0')!.length - 1 + 7 + 22);
  });

  it('a file MarsRL rewrote (shorter than the cursor) is reported, not re-read; a cursor it did not write is refused', async () => {
    const dir = tempCopy();
    const cursor = lastCursor(await readAll(dir));
    fs.writeFileSync(path.join(dir, '2.json.0'), fs.readFileSync(path.join(dir, '2.json.0'), 'utf8').split('\n').slice(0, 2).join('\n') + '\n');
    const again = await readAll(dir, cursor);
    expect(episodesOf(again)).toEqual([]);
    expect(again.flatMap((b) => b.issues)).toEqual([{ file: '2.json.0', position: expect.stringMatching(/^byte \d+$/), message: expect.stringContaining('MarsRL rewrote it') }]);
    await expect(readAll(dir, { files: { '0.json.0': 12 } })).rejects.toThrow('not a MarsRL import cursor');
    await expect(readAll(dir, 'line 3')).rejects.toThrow('not a MarsRL import cursor');
  });
});

describe('MarsRL import: without extract_solution.py outputs, and the DeepSeek-V3.1 prompt records', () => {
  it('keys problems by idx and takes the question from the Solver call when no input rows are in the folder', async () => {
    const dir = tempCopy();
    for (const name of ['init_answer.jsonl', 'eval_accepted.jsonl', 'eval_overall.jsonl']) fs.rmSync(path.join(dir, name));
    const input = rows(path.join(FIXTURE, 'input.jsonl'));
    const episodes = episodesOf(await readAll(dir));
    expect(episodes.map((e) => e.problem)).toEqual(input.map((row, idx) => ({ key: String(idx), question: row.query, answer: '', meta: { idx, qid: null, data_source: null, source: null } })));
    expect(episodes.map((e) => e.correct)).toEqual([null, null, null]);
    expect(episodes.map((e) => e.finalAnswer)).toEqual(['70', '117', '60']);
    // The test file itself copied in gives the rows as well (any *.jsonl whose rows have a query).
    fs.copyFileSync(path.join(FIXTURE, 'input.jsonl'), path.join(dir, 'aime2025.jsonl'));
    expect(episodesOf(await readAll(dir)).map((e) => e.problem?.key)).toEqual(input.map((row) => String(row.qid)));
  });

  it('reads `prompt` records (llm_client.py\'s DeepSeek-V3.1 path) and finds the problem in the prompt', async () => {
    const dir = tempCopy();
    // llm_client.py, the DeepSeekV3.1 branch: <｜begin▁of▁sentence｜>{system}, then <｜User｜>{user} and
    // <｜Assistant｜></think>{assistant}<｜end▁of▁sentence｜> per turn, then <｜Assistant｜><think>.
    const toPrompt = (messages: RawCall['messages']): string => {
      const system = messages.find((m) => m.role === 'system')?.content ?? '';
      const users = messages.filter((m) => m.role === 'user').map((m) => m.content);
      const assistants = messages.filter((m) => m.role === 'assistant').map((m) => m.content);
      let prompt = `<｜begin▁of▁sentence｜>${system}`;
      users.forEach((user, k) => {
        prompt += `<｜User｜>${user}`;
        if (assistants.length >= k + 1) prompt += `<｜Assistant｜></think>${assistants[k]}<｜end▁of▁sentence｜>`;
      });
      return `${prompt}<｜Assistant｜><think>`;
    };
    const calls = rawFiles().get('1.json.0')!;
    const lines = calls.map(({ messages, ...rest }) => JSON.stringify({ prompt: toPrompt(messages), ...rest }));
    fs.writeFileSync(path.join(dir, '1.json.0'), `${lines.join('\n')}\n`);
    const episode = episodesOf(await readAll(dir))[1];
    expect(episode.problem?.key).toBe(String(rows(path.join(FIXTURE, 'input.jsonl'))[1].qid));
    expect(episode.turns.map((t) => t.prompt)).toEqual(calls.map((c) => toPrompt(c.messages)));
    expect(episode.turns.map((t) => t.agent)).toEqual(['solver', 'verifier1', 'corrector1', 'verifier2', 'verifier3', 'verifier4', 'verifier5']);
    expect(episode.correct).toBe(true);
  });
});

describe('MarsRL import: lines read as a stream', () => {
  it('gives complete lines across chunk boundaries (multi-byte text too) with byte offsets, and leaves an unterminated line', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-lines-'));
    temps.push(dir);
    const file = path.join(dir, '0.json.0');
    const long = 'é'.repeat(100_000); // 200,000 bytes: several 64 KiB chunks, characters split between them
    fs.writeFileSync(file, `a\n${long}\nbc\npartial`);
    const lines = [];
    for await (const line of completeLines(file, 0, 1)) lines.push(line);
    expect(lines.map((l) => [l.number, l.text === long ? 'long' : l.text])).toEqual([[1, 'a'], [2, 'long'], [3, 'bc']]);
    expect(lines.map((l) => l.end)).toEqual([2, 2 + Buffer.byteLength(long) + 1, 2 + Buffer.byteLength(long) + 4]);
    const from = [];
    for await (const line of completeLines(file, lines[1].end, 3)) from.push([line.number, line.text, line.end]);
    expect(from).toEqual([[3, 'bc', lines[2].end]]);
  });
});
