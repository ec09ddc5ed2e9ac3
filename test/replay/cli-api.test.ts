/**
 * `marsrl replay` and the StudioApi's replay methods (issue 40) on an RL run trained here: the CLI
 * prints the replayed turns beside the stored ones and exports JSON lines; over the API (validated
 * by dispatch as IPC and HTTP are) a replay starts, pushes its turns as `replay-progress` events,
 * is listed on its run and read back; bad input names the field or flag and the fix.
 */
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { StudioEvent } from '#shared/contract';
import { callStudio } from '../../src-main/api/dispatch';
import { EventHub } from '../../src-main/api/hub';
import { createStudioService } from '../../src-main/api/service';
import { initBackend } from '../../src-main/engine/model/backend';
import { marsrlInProcess } from '../helpers/cli';
import { trainedRun } from '../helpers/trained-run';
import { until } from '../helpers/until';
import { tinyConfig } from '../training/tiny';

beforeAll(async () => {
  await initBackend('wasm');
});

const run = trainedRun('cli', () => tinyConfig({ rollout: { problems_per_step: 1, solver_group: 2, select_k: 1, verifier_group: 2, corrector_group: 2, rounds: 1, max_response_tokens: 12, selection: 'random' }, optimization: { steps: 2, minibatch_size: 8, checkpoint_every: 1 }, eval: { every: 1, k: 1, problems: 2 }, pipeline: { mode: 'sync', segment_tokens: 6, max_segments: 2 } }), 120_000);
const db = () => path.join(run.dir, 'runs.db');
const evalEpisode = (step: number) => run.store.trajectories.pageEpisodes({ runId: run.runId, split: 'test', step, limit: 1 }).items[0];

describe('marsrl replay', () => {
  it('prints the replay beside the stored turns, says it reproduced them and exports JSON lines', async () => {
    const episode = evalEpisode(2);
    const out = path.join(run.dir, 'replay.jsonl');
    const r = await marsrlInProcess(db(), ['replay', String(run.runId), '--episode', String(episode.id), '--checkpoint', '1', '--greedy', '--export', out]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/checkpoint of step 1 of run \d+, greedy/);
    expect(r.out).toMatch(/Reproducible: yes/);
    expect(r.out).toMatch(/same texts as stored: yes/);
    const lines = fs.readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    const stored = run.store.trajectories.episodeTurns(episode.id);
    expect(lines[0]).toMatchObject({ kind: 'replay', episodeId: episode.id, matchesStored: true });
    expect(lines.slice(1).map((l) => l.text)).toEqual(stored.map((t) => t.text));
  }, 60_000);

  it('says a training episode is not reproducible, and names the flag of a bad input', async () => {
    const train = run.store.trajectories.pageEpisodes({ runId: run.runId, split: 'train', step: 0, limit: 1 }).items[0];
    const r = await marsrlInProcess(db(), ['replay', String(run.runId), '--episode', String(train.id), '--seed', '3']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/Reproducible: no — not reproducible: the run sampled this training episode in a batched, grouped rollout/);
    const bad = await marsrlInProcess(db(), ['replay', String(run.runId), '--episode', String(train.id), '--checkpoint', '77']);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/--checkpoint: run \d+ has no checkpoint of step 77 on disk .* on disk: 0, 1/);
    const none = await marsrlInProcess(db(), ['replay', String(run.runId)]);
    expect(none.code).not.toBe(0);
    expect(none.err).toMatch(/exactly one of --episode, --problem or --prompt/);
  }, 60_000);
});

describe('the replay API', () => {
  it('starts a replay, pushes its progress, lists and reads it; the run page lists it', async () => {
    const hub = new EventHub();
    const service = createStudioService({ store: run.store, databasePath: db(), transport: 'http', hub });
    const events: StudioEvent[] = [];
    hub.subscribe((e) => events.push(e));
    const episode = evalEpisode(1);
    const models = (await callStudio(service, 'replayModels', [run.runId])) as Awaited<ReturnType<typeof service.replayModels>>;
    expect(models.checkpoints.filter((c) => c.runId === run.runId).map((c) => c.step).sort()).toEqual([0, 1]);
    const { replayId } = (await callStudio(service, 'startReplay', [{ runId: run.runId, episodeId: episode.id, checkpoint: { step: 0 } }])) as { replayId: number };
    await until(() => events.some((e) => e.type === 'replay-progress' && e.replayId === replayId && e.status === 'done'), 30_000);
    const turns = events.filter((e) => e.type === 'replay-progress' && e.status === 'running').length;
    const detail = await service.getReplay(replayId);
    expect(turns).toBe(detail.turns.length);
    expect(detail.replay.matchesStored).toBe(true);
    expect((await service.listReplays(run.runId)).map((r) => r.id)).toContain(replayId);
  }, 60_000);

  it('refuses bad requests naming the field', async () => {
    const service = createStudioService({ store: run.store, databasePath: db(), transport: 'http' });
    const episode = evalEpisode(1);
    await expect(callStudio(service, 'startReplay', [{ runId: run.runId }])).rejects.toMatchObject({ code: 'invalid_request', message: /startReplay\.0\.episodeId: give exactly one of episodeId, problemId or prompt/ });
    await expect(callStudio(service, 'startReplay', [{ runId: run.runId, episodeId: episode.id, checkpoint: { step: -1 } }])).rejects.toMatchObject({ message: /checkpoint\.step/ });
    await expect(callStudio(service, 'startReplay', [{ runId: run.runId, episodeId: episode.id, checkpoint: { step: 1 }, endpoint: 'x' }])).rejects.toMatchObject({ message: /a checkpoint or an endpoint, not both/ });
    await expect(callStudio(service, 'startReplay', [{ runId: run.runId, episodeId: episode.id, checkpoint: { step: 9 } }])).rejects.toMatchObject({ code: 'invalid_request', issues: [{ path: 'checkpoint.step' }] });
    await expect(callStudio(service, 'getReplay', [424242])).rejects.toMatchObject({ code: 'not_found' });
  });
});
