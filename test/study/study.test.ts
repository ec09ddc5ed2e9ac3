import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../../src-main/engine/store';
import { expandMatrix, MatrixError, parseMatrix, parseMatrixText } from '../../src-main/engine/study/matrix';
import { createStudy, runStudy, studyProgress, type StudyLauncher } from '../../src-main/engine/study/runner';
import { buildStudyReport, writeStudyReport } from '../../src-main/engine/study/report';
import { tempDir } from '../helpers/tmp';
import { seedStudy } from './seed-study';

const shipped = path.resolve(import.meta.dirname, '../../resources/studies/quick-2x2.yaml');

const cleanups: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanups.splice(0)) c();
});

function freshStore(): Store {
  const tmp = tempDir();
  const store = openStore(path.join(tmp.dir, 'study.db'));
  cleanups.push(() => {
    store.close();
    tmp.cleanup();
  });
  return store;
}

function issuesOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof MatrixError) return error.issues.map((i) => `${i.path}: ${i.message}`);
    throw error;
  }
  throw new Error('expected a MatrixError');
}

describe('study matrix files', () => {
  it('parses the shipped 2×2 matrix and expands it into 8 valid run configs, axes outermost, seeds innermost', () => {
    const matrix = parseMatrixText(fs.readFileSync(shipped, 'utf8'), shipped);
    expect(matrix).toMatchObject({ name: 'quick-2x2', preset: 'quick', seeds: [1, 2], concurrency: 2, baseline: { 'reward.scheme': 'decoupled', 'advantage.mode': 'agentwise' } });
    const cells = expandMatrix(matrix);
    expect(cells).toHaveLength(8);
    expect(cells.map((c) => `${c.config.reward.scheme}/${c.config.advantage.mode}/${c.config.seed}`)).toEqual([
      'decoupled/agentwise/1',
      'decoupled/agentwise/2',
      'decoupled/global/1',
      'decoupled/global/2',
      'shared/agentwise/1',
      'shared/agentwise/2',
      'shared/global/1',
      'shared/global/2',
    ]);
    // The preset's own fields survive the merge.
    expect(cells[7].config.optimization.steps).toBe(60);
    expect(cells[7].overrides).toMatchObject({ reward: { scheme: 'shared' }, advantage: { mode: 'global' }, seed: 2 });
    expect(cells[3].label).toBe('reward.scheme=decoupled, advantage.mode=global, seed=2');
  });

  it('supports labelled fragments (e.g. shared vs separate policies) and a seed count', () => {
    const m = parseMatrix({
      name: 'sharing',
      preset: 'quick',
      axes: {
        sharing: [
          { label: 'separate', set: {} },
          { label: 'shared', set: { agents: { solver: 'solver', verifier: 'solver', corrector: 'solver' } } },
        ],
      },
      seeds: 3,
    });
    expect(m.seeds).toEqual([1, 2, 3]);
    const cells = expandMatrix(m);
    expect(cells).toHaveLength(6);
    expect(cells[3].values).toEqual({ sharing: 'shared' });
    expect(cells[3].config.agents.verifier).toBe('solver');
  });

  it('names every bad field with the fix', () => {
    const issues = issuesOf(() =>
      parseMatrix({ name: '', preset: 'nope', axes: { 'reward.scheme': [] }, seeds: [1, 1], concurrency: 0, baseline: { other: 'x' }, extra: 1 }),
    );
    expect(issues).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^extra: unknown field/),
        expect.stringMatching(/^name: required/),
        expect.stringMatching(/^preset: unknown preset "nope"; known presets: .*quick/),
        expect.stringMatching(/^axes\.reward\.scheme: must be a non-empty list/),
        expect.stringMatching(/^seeds: seeds repeat/),
        expect.stringMatching(/^concurrency: must be an integer from 1 to 32/),
        expect.stringMatching(/^baseline\.other: not an axis/),
      ]),
    );
    expect(issuesOf(() => parseMatrix({ name: 'x', axes: { 'advantage.mode': ['agentwise'] }, seeds: 'three' }))).toEqual([expect.stringMatching(/^seeds: required: a list of integer seeds/)]);
    expect(issuesOf(() => parseMatrixText('name: [unclosed', 'bad.yaml'))[0]).toMatch(/malformed YAML/);
  });

  it('validates every cell against the config schema before anything runs', () => {
    const m = parseMatrix({ name: 'bad', preset: 'quick', axes: { 'advantage.mode': ['agentwise', 'sideways'] }, seeds: [1] });
    const issues = issuesOf(() => expandMatrix(m));
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatch(/^cell \[advantage\.mode=sideways, seed=1\] advantage\.mode: /);
  });
});

/** A launcher that records how many runs are alive at once; runs end when the test says so. */
function fakeLauncher(store: Store, outcome: (config: Record<string, unknown>) => 'done' | 'failed' | 'refuse' = () => 'done') {
  let alive = 0;
  let maxAlive = 0;
  const exits = new Map<number, () => void>();
  const launcher: StudyLauncher = {
    async start(request) {
      const result = outcome(request.config ?? {});
      if (result === 'refuse') throw new Error('invalid_request: refused by the fake manager');
      const runId = store.runs.create({ name: 'fake', preset: request.preset ?? null, config: request.config ?? {}, codeVersion: 'test', seed: Number((request.config ?? {}).seed ?? 0) });
      store.runs.setStatus(runId, 'running');
      alive++;
      maxAlive = Math.max(maxAlive, alive);
      // Each fake run ends after a tick, with the outcome the test chose.
      setTimeout(() => {
        store.runs.setStatus(runId, result);
        alive--;
        exits.get(runId)?.();
      }, 5);
      return { runId };
    },
    waitForExit(runId) {
      const status = store.runs.get(runId)?.status;
      if (status !== 'running') return Promise.resolve();
      return new Promise<void>((resolve) => exits.set(runId, resolve));
    },
  };
  return { launcher, maxAlive: () => maxAlive };
}

describe('the study runner', () => {
  it('launches every cell through the launcher with at most `concurrency` runs alive, and persists the study', async () => {
    const store = freshStore();
    const matrix = parseMatrixText(fs.readFileSync(shipped, 'utf8'), shipped);
    const cells = expandMatrix(matrix);
    const studyId = createStudy(store, matrix, cells);
    expect(studyProgress(store, studyId)).toMatchObject({ status: 'queued', total: 8, pending: 8 });
    const { launcher, maxAlive } = fakeLauncher(store);
    const seen: number[] = [];
    const study = await runStudy({ store, launcher, studyId, onProgress: (p) => seen.push(p.running) });
    expect(maxAlive()).toBe(2);
    expect(Math.max(...seen)).toBe(2);
    expect(study.status).toBe('done');
    expect(study.startedAt).not.toBeNull();
    expect(study.endedAt).not.toBeNull();
    const rows = store.studies.cells(studyId);
    expect(rows.every((c) => c.runId !== null)).toBe(true);
    // The launcher received the preset and the cell's fragment.
    expect(store.runs.get(rows[5].runId!)!).toMatchObject({ preset: 'quick', config: { reward: { scheme: 'shared' }, advantage: { mode: 'agentwise' }, seed: 2 } });
    expect(studyProgress(store, studyId)).toMatchObject({ status: 'done', total: 8, done: 8, failed: 0, pending: 0 });
    expect(store.studies.studiesOfRun(rows[0].runId!)).toEqual([studyId]);
  });

  it('honours a concurrency override, keeps going past failed and refused cells, and marks the study failed', async () => {
    const store = freshStore();
    const matrix = parseMatrix({ name: 'mixed', preset: 'quick', axes: { 'advantage.mode': ['agentwise', 'global', 'agent-mean'] }, seeds: [1, 2], concurrency: 4 });
    const studyId = createStudy(store, matrix, expandMatrix(matrix));
    const { launcher, maxAlive } = fakeLauncher(store, (config) => {
      const mode = (config.advantage as { mode: string }).mode;
      return mode === 'global' ? 'failed' : mode === 'agent-mean' && config.seed === 2 ? 'refuse' : 'done';
    });
    const refused: string[] = [];
    const study = await runStudy({ store, launcher, studyId, concurrency: 1, onLaunchError: (label) => refused.push(label) });
    expect(maxAlive()).toBe(1);
    expect(refused).toEqual(['advantage.mode=agent-mean, seed=2']);
    expect(study.status).toBe('failed');
    expect(study.statusReason).toMatch(/3 of 6 runs did not finish; launch refused for advantage.mode=agent-mean, seed=2/);
    expect(studyProgress(store, studyId)).toMatchObject({ done: 3, failed: 3, pending: 0 });

    // Resuming relaunches only the unfinished cells (failed and refused), with fresh runs.
    const doneBefore = store.studies.cells(studyId).filter((c) => c.runId !== null && store.runs.get(c.runId)!.status === 'done').map((c) => c.runId);
    const retry = fakeLauncher(store);
    const resumed = await runStudy({ store, launcher: retry.launcher, studyId, retryUnfinished: true });
    expect(resumed.status).toBe('done');
    expect(store.runs.list({ limit: 100 }).items).toHaveLength(5 + 3);
    expect(store.studies.cells(studyId).filter((c) => doneBefore.includes(c.runId))).toHaveLength(3);
  });

  it('stops launching when aborted and marks the study interrupted', async () => {
    const store = freshStore();
    const matrix = parseMatrix({ name: 'abort', preset: 'quick', axes: { 'reward.scheme': ['decoupled', 'shared'] }, seeds: [1, 2, 3] });
    const studyId = createStudy(store, matrix, expandMatrix(matrix));
    const abort = new AbortController();
    const { launcher } = fakeLauncher(store);
    let launched = 0;
    const counting: StudyLauncher = {
      start: async (r) => {
        if (++launched === 2) abort.abort();
        return launcher.start(r);
      },
      waitForExit: (id) => launcher.waitForExit(id),
    };
    const study = await runStudy({ store, launcher: counting, studyId, signal: abort.signal });
    expect(launched).toBe(2);
    expect(study.status).toBe('interrupted');
    expect(studyProgress(store, studyId)).toMatchObject({ total: 6, done: 2, failed: 4 });
  });
});

describe('the study report', () => {
  it('summarises a finished study per group with spreads, and writes Markdown, CSV and PNG charts', async () => {
    const store = freshStore();
    const { studyId, runIds } = seedStudy(store);
    const report = buildStudyReport(store, studyId);
    expect(report.summary.groups.map((g) => g.label)).toEqual(['decoupled / agentwise', 'decoupled / global', 'shared / agentwise', 'shared / global']);
    expect(report.summary.baselineGroup).toBe('decoupled / agentwise');
    // Seeded final accuracy (step 19): 0.6 + 0.008·19·(1.25 | 1) − (global ? 0.01 : 0) + 0.005·seed.
    const final = (decoupled: boolean, global: boolean, seed: number) => 0.6 + 0.008 * 19 * (decoupled ? 1.25 : 1) - (global ? 0.01 : 0) + 0.005 * seed;
    const sharedGlobal = report.summary.groups[3];
    expect(sharedGlobal.stats['eval/system/accuracy']!.mean).toBeCloseTo((final(false, true, 1) + final(false, true, 2)) / 2, 10);
    expect(sharedGlobal.delta['eval/system/accuracy']).toBeCloseTo(final(false, true, 1) - final(true, false, 1), 10);
    expect(sharedGlobal.spread['eval/system/accuracy'].exceeds).toBe(true);
    // Global normalization spiked the Corrector's gradients (5× at steps 5, 12, 19).
    expect(sharedGlobal.stats['spike/corrector1/count']!.mean).toBe(3);
    expect(report.summary.groups[0].stats['spike/corrector1/count']!.mean).toBe(0);
    expect(report.markdown).toContain('## Summary per group');
    expect(report.markdown).toMatch(/### Differences that exceed the seed spread\n\n- decoupled \/ global: system acc −0\.010 \(worse; seeds 0\.785–0\.790 vs 0\.795–0\.800\)/);
    expect(report.markdown).toContain('- shared / global: corrector1 grad spikes +3 (worse; seeds 3–3 vs 0–0)');
    expect(report.markdown).toContain(`Runs: ${runIds.map((id) => `#${id}`).join(', ')}`);
    // Every metric of the report is explained from the metric catalog (issue 18).
    const glossary = report.markdown.split('## Metrics\n')[1]?.split('\n## ')[0] ?? '';
    expect(glossary).toContain('- **Accuracy** (`eval/system/accuracy`, share (0–1)): Held-out evaluation (for the whole chain)');
    expect(glossary).toMatch(/- \*\*Gradient inflation\*\* \(`corrector1\/inflation`, ratio\): .*Source: Dr\. MAS .*Lemma 4\.2\./);
    expect(glossary).toMatch(/- \*\*pass@\d+\*\* .*Chen et al\. 2021/);
    expect(glossary).toContain('`solver/grad_norm`');

    const out = path.join(path.dirname(store.path), 'report');
    const written = await writeStudyReport(store, studyId, out);
    const png = fs.readFileSync(path.join(out, 'charts', 'eval-system-accuracy.png'));
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.length).toBeGreaterThan(5000);
    expect(fs.readFileSync(path.join(out, 'charts', 'corrector1-grad-norm.svg'), 'utf8')).toMatch(/^<svg/);
    expect(fs.readFileSync(path.join(out, 'report.md'), 'utf8')).toContain('![Held-out system accuracy](charts/eval-system-accuracy.png)');
    const groupsCsv = fs.readFileSync(path.join(out, 'groups.csv'), 'utf8').split('\r\n');
    expect(groupsCsv.find((l) => l.startsWith('shared / global,2,') && l.includes(',eval/system/accuracy,'))).toMatch(/,true,0\.333/);
    expect(written.files).toContain(path.join(out, 'runs.csv'));
  }, 60_000);
});
