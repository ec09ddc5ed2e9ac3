import { beforeAll, describe, expect, it } from 'vitest';
import { callStudio } from '../../src-main/api/dispatch';
import { type Store } from '../../src-main/engine/store';
import type { Page, RunSummary, StudioApi } from '#shared/contract';
import { refusal } from '../helpers/errors';
import { serviceInTemp } from '../helpers/service';

const studio = serviceInTemp('direct');
let store: Store;
let service: StudioApi;

beforeAll(() => {
  ({ store, service } = studio);
  for (let i = 1; i <= 7; i++) {
    store.runs.create({ name: `run-${i}`, config: { task: { family: i % 2 ? 'sort' : 'countdown' } }, codeVersion: 't', seed: i, tags: i === 3 ? ['baseline'] : [] });
  }
});

const rejection = (method: unknown, args: unknown) => refusal(service, method, args);

describe('StudioApi dispatch', () => {
  it('pages runs newest first by keyset and filters them', async () => {
    const first = (await callStudio(service, 'listRuns', [{ limit: 3 }])) as Page<RunSummary>;
    expect(first.items.map((r) => r.name)).toEqual(['run-7', 'run-6', 'run-5']);
    const second = (await callStudio(service, 'listRuns', [{ limit: 3, beforeId: first.nextCursor! }])) as Page<RunSummary>;
    expect(second.items.map((r) => r.name)).toEqual(['run-4', 'run-3', 'run-2']);
    const third = (await callStudio(service, 'listRuns', [{ limit: 3, beforeId: second.nextCursor! }])) as Page<RunSummary>;
    expect(third).toMatchObject({ nextCursor: null });
    expect(third.items.map((r) => r.name)).toEqual(['run-1']);
    const searched = (await callStudio(service, 'listRuns', [{ search: 'countdown' }])) as Page<RunSummary>;
    expect(searched.items.map((r) => r.seed)).toEqual([6, 4, 2]);
    const tagged = (await callStudio(service, 'listRuns', [{ search: 'baseline' }])) as Page<RunSummary>;
    expect(tagged.items.map((r) => r.name)).toEqual(['run-3']);
    const noArgs = (await callStudio(service, 'listRuns', [])) as Page<RunSummary>;
    expect(noArgs.items).toHaveLength(7);
  });

  it('rejects unknown methods and malformed payloads, naming the field', async () => {
    expect(await rejection('dropTables', [])).toMatchObject({ code: 'invalid_request', message: expect.stringMatching(/unknown method "dropTables"; known methods: appInfo/) });
    expect(await rejection('listRuns', { limit: 3 })).toMatchObject({ code: 'invalid_request', message: 'arguments of listRuns must be an array' });
    expect(await rejection('listRuns', [{ limit: 'ten' }])).toMatchObject({ code: 'invalid_request', issues: [{ path: 'listRuns.0.limit' }] });
    expect(await rejection('listRuns', [{ limit: 5000 }])).toMatchObject({ issues: [{ path: 'listRuns.0.limit', message: expect.stringMatching(/500/) }] });
    expect(await rejection('listRuns', [{ status: 'paused' }])).toMatchObject({ issues: [{ path: 'listRuns.0.status' }] });
    expect(await rejection('listRuns', [{ evil: 1 }])).toMatchObject({ issues: [{ path: 'listRuns.0', message: expect.stringMatching(/evil/) }] });
    expect(await rejection('getRun', ['1'])).toMatchObject({ issues: [{ path: 'getRun.0' }] });
    expect(await rejection('getRun', [1, 2])).toMatchObject({ code: 'invalid_request' });
    expect(await rejection('getRun', [424242])).toMatchObject({ code: 'not_found', message: 'run 424242 does not exist' });
    expect(await rejection('getPreset', ['nope'])).toMatchObject({ code: 'not_found', message: expect.stringMatching(/known presets: .*quick/) });
  });

  it('validates configs with the same schema and messages as the CLI', async () => {
    const bad = (await callStudio(service, 'validateConfig', [{ rollout: { solver_group: 0 } }])) as { ok: boolean; issues: unknown[] };
    expect(bad).toEqual({ ok: false, issues: [{ path: 'rollout.solver_group', message: 'must be at least 1', value: 0 }] });
    const good = (await callStudio(service, 'validateConfig', [{ seed: 2 }])) as { ok: boolean; config: { seed: number } };
    expect(good.ok).toBe(true);
    expect(good.config.seed).toBe(2);
  });

  it('answers every listed method', async () => {
    const run = (await callStudio(service, 'getRun', [1])) as { counts: { turns: number }; name: string };
    expect(run.name).toBe('run-1');
    expect(run.counts.turns).toBe(0);
    expect(await callStudio(service, 'appInfo', [])).toMatchObject({ schemaVersion: store.schemaVersion, transport: 'direct' });
    expect((await callStudio(service, 'listPresets', [])) as unknown[]).not.toHaveLength(0);
    expect(await callStudio(service, 'getPreset', ['quick'])).toMatchObject({ task: { family: 'sort' } });
  });
});
