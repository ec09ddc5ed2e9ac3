import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callStudio } from '../../src-main/api/dispatch';
import { toErrorShape } from '#shared/errors';
import { EventHub } from '../../src-main/api/hub';
import { createStudioService } from '../../src-main/api/service';
import { openStore, type Store } from '../../src-main/engine/store';
import type { StudioApi, StudioEvent } from '#shared/contract';
import { tempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof tempDir>;
let store: Store;
let service: StudioApi;
const hub = new EventHub();
const events: StudioEvent[] = [];
let runId: number;

beforeAll(() => {
  tmp = tempDir();
  store = openStore(path.join(tmp.dir, 'x.db'));
  hub.subscribe((e) => events.push(e));
  service = createStudioService({ store, databasePath: store.path, transport: 'direct', hub });
  runId = store.runs.create({ name: 'r', config: { task: { family: 'sort' } }, codeVersion: 't', seed: 1 });
  const w = store.writer({ flushIntervalMs: 0 });
  const problemId = w.newId('problems');
  w.problem({ id: problemId, runId, split: 'train', family: 'sort', problemKey: 'k', question: 'sort 21', answer: '12', meta: null });
  const episodeId = w.newId('episodes');
  w.episode({ id: episodeId, runId, step: 0, problemId, split: 'train', finalAnswer: '12', correct: true, rounds: 0, meta: null });
  for (let i = 0; i < 6; i++) {
    const id = w.newId('turns');
    w.turn({ id, runId, episodeId, step: 0, agent: 'solver', policyId: 'solver', round: 0, groupId: 0, parentTurnId: null, sampleIndex: i, prompt: 'sort 21', text: `A:${i % 2 ? '12' : '21'}`, tokenCount: 4, parsed: i % 2 ? '12' : '21', correct: i % 2 === 1, formatValid: true, policyVersionMin: 0, policyVersionMax: 0, createdAt: 0 });
    w.reward({ turnId: id, runId, value: i % 2, components: { correctness: i % 2 }, scheme: 'decoupled' });
  }
  w.close();
});
afterAll(() => {
  store.close();
  tmp.cleanup();
});

async function waitFor(exportId: string): Promise<Extract<StudioEvent, { type: 'export-finished' }>> {
  for (let i = 0; i < 200; i++) {
    const done = events.find((e) => e.type === 'export-finished' && e.exportId === exportId);
    if (done) return done as Extract<StudioEvent, { type: 'export-finished' }>;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error('export did not finish');
}

describe('export through the StudioApi', () => {
  it('exports in the background and pushes progress and the result', async () => {
    const out = path.join(tmp.dir, 'sft.jsonl');
    const { exportId } = (await callStudio(service, 'startExport', [{ runs: [runId], format: 'sft', out }])) as { exportId: string };
    const finished = await waitFor(exportId);
    expect(finished).toMatchObject({ status: 'done', error: null, result: { rows: 3, out } });
    expect(fs.readFileSync(out, 'utf8').trim().split('\n')).toHaveLength(3);
    expect(events.some((e) => e.type === 'export-progress' && e.exportId === exportId && e.done === e.total)).toBe(true);
  });

  it('answers a usage error at once, naming the field, and leaves no file', async () => {
    const out = path.join(tmp.dir, 'sft.jsonl');
    const shape = await callStudio(service, 'startExport', [{ runs: [runId], format: 'sft', out }]).catch(toErrorShape);
    expect(shape).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/exists/) });
    const bad = await callStudio(service, 'startExport', [{ runs: [runId], format: 'csv', out: 'x' }]).catch(toErrorShape);
    expect(bad).toMatchObject({ code: 'invalid_request', issues: [{ path: 'startExport.0.format' }] });
    const agent = await callStudio(service, 'startExport', [{ runs: [runId], format: 'trajectories', out: path.join(tmp.dir, 'a.parquet'), filters: { agents: ['judge'] } }]).catch(toErrorShape);
    expect(agent).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/judge/) });
    expect(fs.existsSync(path.join(tmp.dir, 'a.parquet'))).toBe(false);
    const cancel = await callStudio(service, 'cancelExport', ['export-999']).catch(toErrorShape);
    expect(cancel).toMatchObject({ code: 'not_found' });
  });
});
