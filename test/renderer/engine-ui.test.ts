/**
 * The renderer's engine parts without a browser (issue 38): the new-run form's engine block
 * (which engine, which fields, their sections, the engine's refusals merged with the schema's,
 * the version note, engine.model one or per policy) and the run page's Ray jobs (latest first,
 * the failure on top, a Ray status's tone, the log as a terminal shows it).
 */
import { describe, expect, it } from 'vitest';
import type { ConfigField, EngineJobInfo, EnginePreview } from '#shared/contract';
import { configSchemaInfo } from '../../src-main/engine/config/fields';
import {
  engineFieldShown,
  engineKindOf,
  engineModelSwitched,
  engineName,
  engineSections,
  envLines,
  isRayEngine,
  mergedIssues,
  policiesInUse,
  versionNote,
} from '../../src-renderer/src/util/engineForm';
import { latestFailure, latestFirst, rayEngineOfConfig, rayTone, terminalText } from '../../src-renderer/src/util/engineJobs';

const okPreview = (over: Partial<Extract<EnginePreview, { ok: true }>> = {}): Extract<EnginePreview, { ok: true }> => ({
  ok: true,
  engine: 'verl',
  engineVersion: '0.9.0',
  versionFrom: 'assumed',
  entrypoint: 'python3 -m verl.trainer.main_ppo trainer.total_training_steps=3',
  overrides: ['trainer.total_training_steps=3'],
  env: { VERL_FILE_LOGGER_PATH: '/runs/m.jsonl', MARSRL_REWARD_SCALE: '1' },
  warnings: [],
  ...over,
});

function job(attempt: number, over: Partial<EngineJobInfo> = {}): EngineJobInfo {
  return { attempt, engine: 'verl', submissionId: `marsrl-1-abc-a${attempt}`, address: 'http://127.0.0.1:8265', status: 'RUNNING', message: null, entrypoint: 'python3 -m verl.trainer.main_ppo', runDir: '/runs/run-1', submittedAt: 1, updatedAt: 2, logTail: '', traceback: null, ...over };
}

describe('new-run form: the engine block', () => {
  it('tells the engine from the document: absent or studio is the Studio, verl and drmas run on Ray', () => {
    expect(engineKindOf({})).toBe('studio');
    expect(engineKindOf({ engine: { kind: 'studio' } })).toBe('studio');
    expect(engineKindOf({ engine: { kind: 'verl' } })).toBe('verl');
    expect(engineKindOf({ engine: { kind: 'drmas', address: 'local' } })).toBe('drmas');
    expect(engineKindOf({ engine: 'verl' })).toBe('studio');
    expect([isRayEngine({}), isRayEngine({ engine: { kind: 'drmas' } })]).toEqual([false, true]);
    expect([engineName('verl'), engineName('drmas'), engineName('other')]).toEqual(['veRL', 'DrMAS', 'other']);
  });

  it('shows no setting for the Studio, DrMAS’s own only for DrMAS, and a field with a problem whatever the engine', () => {
    expect(engineFieldShown('engine.kind', 'studio', false)).toBe(true);
    expect(engineFieldShown('engine.address', 'studio', false)).toBe(false);
    expect(engineFieldShown('engine.address', 'verl', false)).toBe(true);
    expect(engineFieldShown('engine.working_dir', 'verl', false)).toBe(false);
    expect(engineFieldShown('engine.drmas.orchestra', 'verl', false)).toBe(false);
    expect(engineFieldShown('engine.drmas.orchestra', 'drmas', false)).toBe(true);
    // A DrMAS checkout left in a veRL document is in view when refused, the refusal under it.
    expect(engineFieldShown('engine.working_dir', 'verl', true)).toBe(true);
  });

  it('lays out every engine field of the schema in a section, the overrides last', () => {
    const fields = configSchemaInfo().fields.filter((f) => f.path.startsWith('engine.'));
    const sections = engineSections(fields);
    const laidOut = sections.flatMap((s) => s.fields.map((f) => f.path));
    // Every field but the kind (drawn as the block's own switch), each once: a new schema field lands in "more", never lost.
    expect(laidOut.sort()).toEqual(fields.map((f) => f.path).filter((p) => p !== 'engine.kind').sort());
    expect(sections[0].fields.map((f) => f.path)).toContain('engine.model');
    expect(sections[sections.length - 1]).toMatchObject({ id: 'overrides', fields: [{ path: 'engine.overrides' }] });
    const extra: ConfigField = { path: 'engine.new_knob', group: 'general', kind: 'integer', description: '' };
    const withExtra = engineSections([...fields, extra]);
    expect(withExtra.find((s) => s.id === 'more')?.fields.map((f) => f.path)).toEqual(['engine.new_knob']);
    expect(withExtra[withExtra.length - 1].id).toBe('overrides');
  });

  it('merges the engine’s refusals with the schema’s, each once', () => {
    const schema = [{ path: 'task.train_size', message: 'too small' }];
    expect(mergedIssues(schema, null)).toEqual(schema);
    expect(mergedIssues([], okPreview())).toEqual([]);
    const refused: EnginePreview = { ok: false, issues: [{ path: 'task.train_size', message: 'too small' }, { path: 'optimization.minibatch_size', message: 'not a multiple of 8' }] };
    expect(mergedIssues(schema, refused)).toEqual([schema[0], { path: 'optimization.minibatch_size', message: 'not a multiple of 8' }]);
  });

  it('says where the planned version came from, and lists the job’s environment by name', () => {
    expect(versionNote(okPreview())).toBe('Planned for veRL 0.9.0, the newest the Studio knows; the launch asks engine.python for its version.');
    expect(versionNote(okPreview({ versionFrom: 'engine.version', engineVersion: '0.7.1' }))).toMatch(/^Planned for veRL 0\.7\.1, as engine\.version says/);
    expect(versionNote(okPreview({ versionFrom: 'probe', engine: 'drmas', engineVersion: '0.3.1.dev' }))).toBe('Planned for DrMAS 0.3.1.dev, the version engine.python reported.');
    expect(envLines({ B: '2', A: '1=x' })).toEqual(['A=1=x', 'B=2']);
  });

  it('switches engine.model between one model for every policy and one per policy, keeping what was typed', () => {
    const roles = ['solver', 'verifier', 'corrector'];
    expect(policiesInUse({ agents: { solver: 'solver', verifier: 'verifier', corrector: 'corrector' } }, roles)).toEqual(['solver', 'verifier', 'corrector']);
    expect(policiesInUse({ agents: { solver: 'shared', verifier: 'shared', corrector: 'shared' } }, roles)).toEqual(['shared']);
    expect(policiesInUse({ policies: { solver: {} } }, roles)).toEqual(['solver']);
    expect(engineModelSwitched('/m/a', true, ['solver', 'verifier'])).toEqual({ solver: '/m/a', verifier: '/m/a' });
    expect(engineModelSwitched(undefined, true, ['solver'])).toEqual({});
    expect(engineModelSwitched({ solver: '/m/a', verifier: '/m/b' }, false, ['solver', 'verifier'])).toBe('/m/a');
    expect(engineModelSwitched({}, false, ['solver'])).toBeUndefined();
    expect(engineModelSwitched('/m/a', false, ['solver'])).toBe('/m/a');
  });
});

describe('run page: the Ray jobs of an engine run', () => {
  it('knows an engine run by its config', () => {
    expect(rayEngineOfConfig({ engine: { kind: 'verl' } })).toBe('verl');
    expect(rayEngineOfConfig({ engine: { kind: 'drmas' } })).toBe('drmas');
    expect(rayEngineOfConfig({ engine: { kind: 'studio' } })).toBeNull();
    expect(rayEngineOfConfig({ task: {} })).toBeNull();
    expect(rayEngineOfConfig(null)).toBeNull();
  });

  it('lists the attempts latest first, and puts the latest attempt’s failure on top (not an earlier one’s)', () => {
    const first = job(1, { status: 'FAILED', traceback: 'Traceback (most recent call last):\nValueError: a' });
    const second = job(2, { status: 'RUNNING' });
    expect(latestFirst([first, second]).map((j) => j.attempt)).toEqual([2, 1]);
    expect(latestFailure([first, second])).toBeNull();
    const failed = job(2, { status: 'FAILED', message: 'Job entrypoint command failed with exit code 1', traceback: 'Traceback …' });
    expect(latestFailure([first, failed])).toEqual({ attempt: 2, submissionId: 'marsrl-1-abc-a2', message: 'Job entrypoint command failed with exit code 1', traceback: 'Traceback …' });
    expect(latestFailure([])).toBeNull();
  });

  it('draws each Ray status in the run list’s colours', () => {
    expect(['PENDING', 'RUNNING', 'SUCCEEDED', 'FAILED', 'STOPPED', null, 'WEIRD'].map(rayTone)).toEqual(['pending', 'running', 'done', 'failed', 'stopped', 'unknown', 'unknown']);
  });

  it('shows the log as a terminal leaves it: Ray’s colours taken out, a rewritten progress line at its last state', () => {
    const esc = String.fromCharCode(27);
    const log = `${esc}[36m(TaskRunner pid=4242)${esc}[0m step:1 - actor/pg_loss:-0.003\n${esc}]0;title${String.fromCharCode(7)}plain\r\n10%|#  |\r50%|#####|\r100%|##########|\nend`;
    expect(terminalText(log)).toBe('(TaskRunner pid=4242) step:1 - actor/pg_loss:-0.003\nplain\n100%|##########|\nend');
    expect(terminalText('')).toBe('');
  });
});
