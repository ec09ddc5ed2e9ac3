/**
 * A MarsRL output folder logs no metrics; the importer derives the accuracy curves a Studio run
 * logs from the judged episodes, so Compare shows a MarsRL evaluation beside a Studio run (issue
 * 39). Expected values come from the fixture's raw call files and input rows in a plain loop,
 * judged with the checker, not from the importer.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { runImport } from '../../src-main/engine/imports/importer';
import { openStore, type Store } from '../../src-main/engine/store';
import { judgeMathAnswer } from '../../src-main/engine/tasks/math-answer';
import { tempDir } from '../helpers/tmp';

const FIXTURE = path.resolve('test/fixtures/imports/marsrl');
let tmp: ReturnType<typeof tempDir>;
let store: Store;

beforeEach(() => {
  tmp = tempDir();
  store = openStore(path.join(tmp.dir, 'studio.db'));
});
afterEach(() => {
  store.close();
  tmp.cleanup();
});

const jsonLines = (file: string) => fs.readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, string>);

/** Per problem: is the last finished Solver/Corrector reply right, and the first finished Solver reply? */
function expectedAccuracy(outputs: string): { system: number; solver: number } {
  const rows = jsonLines(path.join(FIXTURE, 'input.jsonl'));
  const names = fs.readdirSync(outputs).filter((n) => /^\d+\.json\.\d+$/.test(n));
  let system = 0;
  let solver = 0;
  for (const name of names) {
    const reference = String(rows[Number(name.split('.')[0])].ans_box);
    const replies = jsonLines(path.join(outputs, name)).filter((c) => c.call_reason !== 'verify_solution' && c.finish_reason === 'stop');
    const judge = (c: Record<string, string>) => judgeMathAnswer(reference, c.text.split('</think>').pop()!).correct;
    if (judge(replies[replies.length - 1])) system++;
    if (judge(replies.find((c) => c.call_reason === 'step1')!)) solver++;
  }
  return { system: system / names.length, solver: solver / names.length };
}

it('derives eval/system and eval/solver accuracy from the judged episodes, and recomputes them when the folder grows', async () => {
  const outputs = path.join(tmp.dir, 'outputs');
  fs.cpSync(path.join(FIXTURE, 'outputs'), outputs, { recursive: true });
  fs.copyFileSync(path.join(FIXTURE, 'input.jsonl'), path.join(tmp.dir, 'outputs', 'input.jsonl'));
  const held = path.join(tmp.dir, '2.json.0');
  fs.renameSync(path.join(outputs, '2.json.0'), held);
  const first = await runImport(store, { path: outputs });
  const runId = first.runs[0].runId;
  const series = (key: string) => store.metrics.series(runId, key).items.map((p) => [p.step, p.value]);
  const before = expectedAccuracy(outputs);
  expect(series('eval/system/accuracy')).toEqual([[0, before.system]]);
  expect(series('eval/solver/accuracy')).toEqual([[0, before.solver]]);
  fs.renameSync(held, path.join(outputs, '2.json.0'));
  await runImport(store, { path: outputs });
  const after = expectedAccuracy(outputs);
  expect(after.system).not.toBe(before.system);
  expect(series('eval/system/accuracy')).toEqual([[0, after.system]]);
  expect(series('eval/solver/accuracy')).toEqual([[0, after.solver]]);
});
