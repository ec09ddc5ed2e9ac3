/**
 * Issue 40's problem view over the StudioApi: listProblemOutcomes and getProblemEpisodes through
 * the dispatcher (as IPC calls them) and over HTTP (as `marsrl serve` answers them), and the bad
 * payloads each refuses, naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callStudio } from '../../src-main/api/dispatch';
import { EventHub } from '../../src-main/api/hub';
import { createStudioService } from '../../src-main/api/service';
import { createStudioServer, type StudioServer } from '../../src-main/server/server';
import type { ProblemEpisodes, ProblemOutcomePage, StudioApi, StudioErrorShape } from '#shared/contract';
import { toErrorShape } from '#shared/errors';
import { storeInTemp } from '../helpers/runs-db';
import { seedProblems, type SeededProblems } from '../helpers/seed';
import { api } from '../server/http';

const db = storeInTemp('problems-api.db');
let seeded: SeededProblems;
let service: StudioApi;
let server: StudioServer;
let runIds: number[];

beforeAll(async () => {
  seeded = seedProblems(db.store, { problems: 8, heldOut: 2, steps: [0, 10, 20] });
  runIds = seeded.runs.map((r) => r.id);
  const hub = new EventHub();
  service = createStudioService({ store: db.store, databasePath: db.databasePath, transport: 'http', hub });
  server = await createStudioServer({ service, hub, port: 0, log: () => {} });
});
afterAll(async () => {
  await server?.close();
});

const refused = async (method: string, args: unknown[]): Promise<StudioErrorShape> => {
  try {
    await callStudio(service, method, args);
  } catch (error) {
    return toErrorShape(error);
  }
  throw new Error(`${method} accepted ${JSON.stringify(args)}`);
};

describe('problems through the dispatcher', () => {
  it('lists the matched problems, held-out first, each run an outcome, and filters the ones that differ', async () => {
    const page = (await callStudio(service, 'listProblemOutcomes', [{ runIds }])) as ProblemOutcomePage;
    expect(page.runs.map((r) => [r.runId, r.label])).toEqual([[runIds[0], 'decoupled / agentwise'], [runIds[1], 'shared / global']]);
    expect(page.items.map((r) => r.split)).toEqual(seeded.problems.map((p) => p.split).sort((a, b) => (a === b ? 0 : a === 'test' ? -1 : 1)));
    const differs = (await callStudio(service, 'listProblemOutcomes', [{ runIds, differs: true }])) as ProblemOutcomePage;
    expect(differs.items.map((r) => r.key)).toEqual(page.items.filter((r) => r.differs).map((r) => r.key));
    expect(differs.total).toBe(page.counts.differing);
  });

  it("opens one problem from a turn: both runs' episodes at the three steps", async () => {
    const episode = seeded.episodes.find((e) => e.runId === runIds[1] && e.step === 20 && e.matchKey === seeded.problems[3].matchKey)!;
    const view = (await callStudio(service, 'getProblemEpisodes', [{ runIds, turnId: episode.turns[0].id }])) as ProblemEpisodes;
    expect(view.steps).toEqual([0, 10, 20]);
    expect(view.episodes).toHaveLength(6);
    expect(view.problem.question).toBe(seeded.problems[3].question);
    const rewards = view.episodes.find((e) => e.episode.id === episode.episodeId)!.turns.map((t) => t.reward);
    expect(rewards).toEqual(episode.turns.map((t) => t.reward));
  });

  it('refuses bad payloads, naming the field and the fix', async () => {
    const cases: [string, unknown[], RegExp][] = [
      ['listProblemOutcomes', [{}], /listProblemOutcomes\.0\.runIds/],
      ['listProblemOutcomes', [{ runIds: [] }], /choose at least one run/],
      ['listProblemOutcomes', [{ runIds, split: 'heldout' }], /split: 'test' \(the held-out set\) or 'train'/],
      ['listProblemOutcomes', [{ runIds, limit: 0 }], /limit/],
      ['listProblemOutcomes', [{ runIds, colour: 'red' }], /colour/],
      ['getProblemEpisodes', [{ runIds }], /give exactly one of problemId .* or turnId/],
      ['getProblemEpisodes', [{ runIds, problemId: 1, turnId: 1 }], /give exactly one of problemId/],
      ['getProblemEpisodes', [{ runIds, problemId: -3 }], /getProblemEpisodes\.0\.problemId/],
      ['getProblemEpisodes', [{ runIds, turnId: 1, steps: [] }], /give at least one step/],
      ['getProblemEpisodes', [{ runIds, turnId: 1, steps: [1.5] }], /steps\.0/],
      ['getProblemEpisodes', ['problem 3'], /getProblemEpisodes\.0/],
    ];
    for (const [method, args, message] of cases) {
      const error = await refused(method, args);
      expect(error.code, JSON.stringify(args)).toBe('invalid_request');
      expect(error.message, JSON.stringify(args)).toMatch(message);
    }
  });

  it('answers not_found for a missing run, problem or turn, and invalid_request for a problem of another run', async () => {
    expect(await refused('listProblemOutcomes', [{ runIds: [runIds[0], 9999] }])).toMatchObject({ code: 'not_found', message: 'run 9999 does not exist' });
    expect(await refused('getProblemEpisodes', [{ runIds, problemId: 99_999 }])).toMatchObject({ code: 'not_found', message: expect.stringMatching(/problem 99999 does not exist/) });
    expect(await refused('getProblemEpisodes', [{ runIds, turnId: 99_999 }])).toMatchObject({ code: 'not_found' });
    const ofSecond = seeded.episodes.find((e) => e.runId === runIds[1])!.problemId;
    const error = await refused('getProblemEpisodes', [{ runIds: [runIds[0]], problemId: ofSecond }]);
    expect(error.code).toBe('invalid_request');
    expect(error.issues?.[0].path).toBe('runIds');
    expect(error.message).toContain(`add run ${runIds[1]}`);
  });
});

describe('problems over HTTP', () => {
  it('serves the same list and episodes, and a 400 naming the field for a bad payload', async () => {
    const direct = (await callStudio(service, 'listProblemOutcomes', [{ runIds, limit: 3 }])) as ProblemOutcomePage;
    const res = await api(server.port, 'listProblemOutcomes', [{ runIds, limit: 3 }]);
    expect(res.status).toBe(200);
    expect(res.json<{ result: unknown }>().result).toEqual(direct);
    const problemId = direct.items[0].runs[0]!.problemId;
    const episodes = await api(server.port, 'getProblemEpisodes', [{ runIds, problemId, steps: [10] }]);
    expect(episodes.status).toBe(200);
    expect(episodes.json<{ result: ProblemEpisodes }>().result.episodes.map((e) => e.step)).toEqual([10, 10]);
    const bad = await api(server.port, 'getProblemEpisodes', [{ runIds: ['a'], problemId }]);
    expect(bad.status).toBe(400);
    expect(bad.body).toMatch(/getProblemEpisodes\.0\.runIds\.0/);
  });
});
