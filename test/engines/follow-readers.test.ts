/**
 * The readers behind following an engine run (issue 38) and importing a finished one (issue 39):
 * Python's JSON, growing files, Ray's log lines, the dumps' completeness rule, the metric mapping.
 * Sample lines are written to the engines' formats as their code fixes them (the research note
 * §2-§7 quotes the code).
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parsePythonJson } from '../../src-main/engine/engines/follow/pyjson';
import { EMPTY_CURSOR, readNewLines } from '../../src-main/engine/engines/follow/lines';
import { parseConsoleValue, parseStepLine, scanTraceback, splitRayPrefix, dumpedPath, type TracebackState } from '../../src-main/engine/engines/follow/console';
import { parseVerlUid, provenByLaterFile, turnOfLine } from '../../src-main/engine/engines/follow/dumps';
import { derivedStepMetrics, mapMetricKey } from '../../src-main/engine/engines/follow/mapping';
import { followAttempt, initialFollowState } from '../../src-main/engine/engines/follow/follower';
import type { FollowSpec } from '../../src-main/engine/engines/follow/spec';
import type { TurnRecord } from '../../src-main/engine/engines/follow/records';
import { tempDir } from '../helpers/tmp';

const tmp = tempDir('marsrl-follow-readers-');
afterAll(tmp.cleanup);

const DRMAS_AGENTS = [
  { engineId: 'Solver Agent', wgId: 'Qwen3-4B_Solver Agent', role: 'solver' as const },
  { engineId: 'Verifier Agent', wgId: 'Qwen3-4B_Verifier Agent', role: 'verifier' as const },
  { engineId: 'Corrector Agent', wgId: 'Qwen3-4B_Corrector Agent', role: 'corrector' as const },
];

function spec(engine: 'verl' | 'drmas', runDir: string, over: Partial<FollowSpec> = {}): FollowSpec {
  const a = `${runDir}/attempt-1`;
  return {
    engine,
    engineVersion: engine === 'verl' ? '0.7.1' : '0.3.1.dev',
    dumpOrder: engine === 'verl' ? 'legacy' : 'drmas',
    uid: false,
    metricSource: engine === 'verl' ? 'file' : 'console',
    consoleActor: 'TaskRunner',
    files: { attemptDir: a, metricsFile: engine === 'verl' ? `${a}/metrics.jsonl` : null, rolloutDir: `${a}/rollout`, validationDir: engine === 'verl' ? `${a}/validation` : null, tensorboardDir: null, checkpointsDir: `${runDir}/checkpoints` },
    runDir,
    localRunDir: runDir,
    attempt: 1,
    agents: engine === 'verl' ? [{ engineId: 'solver', wgId: 'actor', role: 'solver' }] : DRMAS_AGENTS,
    dataSources: ['marsrl/math'],
    valN: 1,
    hook: engine === 'drmas',
    ...over,
  };
}

describe('Python JSON', () => {
  it('reads json.dumps\'s NaN and Infinity tokens, and leaves them alone inside strings', () => {
    expect(parsePythonJson('{"score": NaN, "a": Infinity, "b": -Infinity, "c": 1.5}')).toEqual({ score: Number.NaN, a: Infinity, b: -Infinity, c: 1.5 });
    expect(parsePythonJson('{"output": "NaN is not Infinity", "x": [NaN]}')).toEqual({ output: 'NaN is not Infinity', x: [Number.NaN] });
    expect(parsePythonJson('{"q": "say \\"NaN\\" -Infinity", "v": 1}')).toEqual({ q: 'say "NaN" -Infinity', v: 1 });
    expect(() => parsePythonJson('{"a": nan}')).toThrow(SyntaxError);
    expect(() => parsePythonJson('{"a": 1')).toThrow(SyntaxError);
  });
});

describe('a file being appended to', () => {
  it('holds back a half-written line and continues from its cursor', () => {
    const file = path.join(tmp.dir, 'metrics.jsonl');
    fs.writeFileSync(file, '{"step":0,"data":{"a":1}}\n{"step":1,"da');
    const first = readNewLines(file, EMPTY_CURSOR);
    if (first.state !== 'ok') throw new Error(first.state);
    expect(first.lines.map((l) => [l.line, l.offset, l.text])).toEqual([[1, 0, '{"step":0,"data":{"a":1}}']]);
    expect(first.pendingBytes).toBe('{"step":1,"da'.length);
    fs.appendFileSync(file, 'ta":{"a":2}}\n{"step":2,"data":{"a":3}}\n');
    const second = readNewLines(file, first.cursor);
    if (second.state !== 'ok') throw new Error(second.state);
    expect(second.lines.map((l) => [l.line, l.text])).toEqual([[2, '{"step":1,"data":{"a":2}}'], [3, '{"step":2,"data":{"a":3}}']]);
    expect(second.lines[0].offset).toBe(26);
    expect(second.pendingBytes).toBe(0);
    // Nothing new: nothing returned, same cursor.
    const third = readNewLines(file, second.cursor);
    expect(third.state === 'ok' && third.lines.length).toBe(0);
  });

  it('recognises a rewritten file (veRL\'s file logger truncates it on every start) and never merges it', () => {
    const file = path.join(tmp.dir, 'rewritten.jsonl');
    fs.writeFileSync(file, '{"step":1,"data":{"a":1}}\n{"step":2,"data":{"a":2}}\n');
    const read = readNewLines(file, EMPTY_CURSOR);
    if (read.state !== 'ok') throw new Error(read.state);
    fs.writeFileSync(file, '{"step":9,"data":{"a":9}}\n');
    expect(readNewLines(file, read.cursor).state).toBe('rewritten');
    // Same length, other bytes at the start.
    fs.writeFileSync(file, '{"step":7,"data":{"a":1}}\n{"step":2,"data":{"a":2}}\n');
    expect(readNewLines(file, read.cursor).state).toBe('rewritten');
    expect(readNewLines(path.join(tmp.dir, 'absent.jsonl'), EMPTY_CURSOR).state).toBe('missing');
  });

  it('reads multi-byte text split anywhere', () => {
    const file = path.join(tmp.dir, 'utf8.jsonl');
    const line = '{"input": "用户：2+2=？ 🙂", "output": "四"}';
    const bytes = Buffer.from(`${line}\n`);
    fs.writeFileSync(file, bytes.subarray(0, 12));
    const a = readNewLines(file, EMPTY_CURSOR);
    if (a.state !== 'ok') throw new Error(a.state);
    expect(a.lines).toHaveLength(0);
    fs.appendFileSync(file, bytes.subarray(12));
    const b = readNewLines(file, a.cursor);
    expect(b.state === 'ok' && b.lines[0].text).toBe(line);
  });
});

describe('Ray\'s job log', () => {
  it('splits the actor prefix Ray puts on worker output (worker.py print_worker_logs)', () => {
    expect(splitRayPrefix('\x1b[36m(TaskRunner pid=2893)\x1b[0m step:1 - a:1')).toEqual({ actor: 'TaskRunner', pid: 2893, text: 'step:1 - a:1' });
    expect(splitRayPrefix('\x1b[2m\x1b[36m(TaskRunnerV1 pid=7, ip=10.0.0.5)\x1b[0m hello')).toEqual({ actor: 'TaskRunnerV1', pid: 7, text: 'hello' });
    expect(splitRayPrefix('(pid=12) plain worker')).toEqual({ actor: null, pid: 12, text: 'plain worker' });
    expect(splitRayPrefix('(raylet) warning')).toMatchObject({ actor: 'raylet', text: 'warning' });
    expect(splitRayPrefix('(WorkerDict pid=5) loading [repeated 7x across cluster]')).toEqual({ actor: 'WorkerDict', pid: 5, text: 'loading' });
    expect(splitRayPrefix('Traceback (most recent call last):')).toEqual({ actor: null, pid: null, text: 'Traceback (most recent call last):' });
    expect(splitRayPrefix('(TaskRunner pid=1)   File "x.py", line 3').text).toBe('  File "x.py", line 3');
  });

  it('reads the console logger\'s values: pprint reprs, numpy 2 wrappers, DrMAS\'s {:.3f}', () => {
    const table: [string, number | null][] = [['0.4375', 0.4375], ['1e-06', 1e-6], ['-0.0031', -0.0031], ['True', 1], ['False', 0], ['nan', Number.NaN], ['inf', Infinity], ['-inf', -Infinity], ['np.float64(0.0042)', 0.0042], ['np.int64(3)', 3], ['tensor(0.5000)', 0.5], ['tensor(0.5, device=\'cuda:0\')', 0.5], ['12.000', 12], ['abc', null], ['[1, 2]', null]];
    for (const [raw, value] of table) expect(parseConsoleValue(raw), raw).toEqual(value);
  });

  it('parses step lines, keys with spaces, and a tqdm bar glued in front', () => {
    expect(parseStepLine('step:3 - actor/Qwen3-4B_Solver Agent/pg_loss:-0.012 - critic/Qwen3-4B_Solver Agent/score/mean:0.406 - timing_s/step:913.442')).toEqual({
      step: 3,
      values: [['actor/Qwen3-4B_Solver Agent/pg_loss', -0.012], ['critic/Qwen3-4B_Solver Agent/score/mean', 0.406], ['timing_s/step', 913.442]],
    });
    expect(parseStepLine('Training Progress:  10%|█         | 1/10 [00:41<06:12]step:1 - actor/lr:1e-06')).toEqual({ step: 1, values: [['actor/lr', 1e-6]] });
    expect(parseStepLine('step:7')).toEqual({ step: 7, values: [] });
    // Not a step line: the console's other output, and a key that merely contains "step:".
    expect(parseStepLine('Setting global step to 5')).toBeNull();
    expect(parseStepLine('training/global_step:3')).toBeNull();
    expect(dumpedPath('Dumped generations to /runs/r/attempt-1/rollout/12.jsonl')).toBe('/runs/r/attempt-1/rollout/12.jsonl');
  });

  it('captures a traceback up to its exception line', () => {
    const lines = [
      '(TaskRunner pid=9) Traceback (most recent call last):',
      '(TaskRunner pid=9)   File "/opt/verl/verl/trainer/ppo/ray_trainer.py", line 1405, in fit',
      '(TaskRunner pid=9)     actor_output = self.actor_rollout_wg.update_actor(batch)',
      '(TaskRunner pid=9) RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB',
      'next line',
    ];
    let state: TracebackState | null = null;
    const done: TracebackState[] = [];
    lines.forEach((l, i) => {
      const r = scanTraceback(state, splitRayPrefix(l), i + 1, 0);
      state = r.state;
      if (r.done) done.push(r.done);
    });
    expect(done).toHaveLength(1);
    expect(done[0].lines[done[0].lines.length - 1]).toBe('RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB');
    expect([done[0].actor, done[0].startLine]).toEqual(['TaskRunner', 1]);
  });
});

describe('dumps', () => {
  it('proves a step\'s file complete by a file written after it (one writer thread, submission order)', () => {
    // legacy: val/start, then per step rollout/N then validation/N.
    expect(provenByLaterFile('legacy', 'train', 2, [1, 2], [0])).toBe(false);
    expect(provenByLaterFile('legacy', 'train', 2, [1, 2], [0, 2])).toBe(true);
    expect(provenByLaterFile('legacy', 'test', 2, [1, 2], [0, 2])).toBe(false);
    expect(provenByLaterFile('legacy', 'test', 2, [1, 2, 3], [0, 2])).toBe(true);
    expect(provenByLaterFile('legacy', 'test', 0, [1], [0])).toBe(true);
    // V1: validation/N before rollout/N.
    expect(provenByLaterFile('v1', 'test', 2, [1, 2], [0, 2])).toBe(true);
    expect(provenByLaterFile('v1', 'train', 2, [1, 2], [0, 2])).toBe(false);
    expect(provenByLaterFile('drmas', 'train', 4, [3, 4], [])).toBe(false);
    expect(provenByLaterFile('drmas', 'train', 3, [3, 4], [])).toBe(true);
  });

  it('reads veRL lines without and with uid, and DrMAS lines with and without the hook', () => {
    const src = { file: 'rollout/1.jsonl', line: 1, offset: 0 };
    const v071 = turnOfLine('{"input": "user\\n2+2?\\nassistant\\n", "output": "\\\\boxed{4}", "gts": "4", "score": 1.0, "step": 1, "acc": 1.0, "pred": "4", "format_valid": 1.0}', 0, src, { split: 'train', file: src.file, agents: [{ engineId: 'solver', wgId: 'actor', role: 'solver' }], engine: 'verl' });
    expect(v071).toMatchObject({ step: 1, agent: 'solver', role: 'solver', reward: 1, correct: true, groundTruth: '4', group: null, sampleIndex: null, formatValid: true, duplicate: false, extras: { acc: 1, pred: '4', format_valid: 1 } });
    const v090 = turnOfLine('{"input": "q", "output": "o", "gts": 18, "score": NaN, "step": 2, "uid": "0b7e8c1e-5d0a-4a57-9b39-1e2f0b8f6a11_3_0"}', 5, src, { split: 'train', file: src.file, agents: [{ engineId: 'solver', wgId: 'actor', role: 'solver' }], engine: 'verl' });
    expect([v090.group, v090.sampleIndex, v090.groundTruth, v090.correct, Number.isNaN(v090.reward)]).toEqual(['0b7e8c1e-5d0a-4a57-9b39-1e2f0b8f6a11', 3, '18', null, true]);
    expect(parseVerlUid('a-b_c')).toBeNull();
    const hooked = turnOfLine('{"input": "i", "output": "<verify>reject</verify>", "score": 0.0, "step": 3, "agent_id": "Verifier Agent", "wg_id": "Qwen3-4B_Verifier Agent", "uid": "u1", "traj_uid": "t1", "env_step": 1, "turn": 3, "round": 1, "is_action_valid": 1, "advantage": -0.7071, "dup": 1}', 0, src, { split: 'train', file: src.file, agents: DRMAS_AGENTS, engine: 'drmas' });
    expect(hooked).toMatchObject({ agent: 'verifier2', role: 'verifier', round: 1, engineAgentId: 'Verifier Agent', wgId: 'Qwen3-4B_Verifier Agent', group: 'u1', trajectory: 't1', advantage: -0.7071, duplicate: true, formatValid: true, extras: {} });
    const bare = turnOfLine('{"input": "i", "output": "o", "score": -0.1, "step": 3}', 0, src, { split: 'train', file: src.file, agents: DRMAS_AGENTS, engine: 'drmas' });
    expect([bare.agent, bare.role, bare.round, bare.duplicate, bare.advantage, bare.group]).toEqual([null, null, null, null, null, null]);
    expect(() => turnOfLine('{"input": "i"}', 0, src, { split: 'train', file: src.file, agents: DRMAS_AGENTS, engine: 'drmas' })).toThrow(/input.*output/);
  });
});

describe('metrics onto the Studio\'s catalog, only where they mean the same', () => {
  it('maps veRL keys', () => {
    const s = spec('verl', '/r');
    expect(mapMetricKey(s, 'actor/grad_norm')).toEqual([{ key: 'solver/grad_norm', via: 'mapped' }]);
    expect(mapMetricKey(s, 'critic/score/mean')).toEqual([{ key: 'solver/reward/mean', via: 'mapped' }]);
    expect(mapMetricKey(s, 'timing_s/step')).toEqual([{ key: 'perf/step_s', via: 'mapped' }]);
    expect(mapMetricKey(s, 'val-core/marsrl/math/acc/mean@1').map((m) => m.key)).toEqual(['eval/system/accuracy', 'eval/solver/accuracy']);
    // Not the same: token-weighted advantages, bootstrap best@k, a val N other than the plan's.
    expect(mapMetricKey(s, 'critic/advantages/mean')).toEqual([{ key: 'verl/critic/advantages/mean', via: 'engine' }]);
    expect(mapMetricKey(s, 'val-core/marsrl/math/acc/best@4/mean')).toEqual([{ key: 'verl/val-core/marsrl/math/acc/best@4/mean', via: 'engine' }]);
    expect(mapMetricKey(s, 'val-core/marsrl/math/acc/mean@4')).toEqual([{ key: 'verl/val-core/marsrl/math/acc/mean@4', via: 'engine' }]);
    expect(mapMetricKey({ ...s, valN: 4 }, 'val-core/marsrl/math/acc/mean@4').map((m) => m.key)).toEqual(['eval/system/avg@4', 'eval/solver/avg@4']);
  });

  it('maps DrMAS keys by worker group, spaces included', () => {
    const s = spec('drmas', '/r');
    expect(mapMetricKey(s, 'actor/Qwen3-4B_Verifier Agent/grad_norm')).toEqual([{ key: 'verifier/grad_norm', via: 'mapped' }]);
    expect(mapMetricKey(s, 'actor/Qwen3-4B_Corrector Agent/entropy_loss')).toEqual([{ key: 'corrector/entropy', via: 'mapped' }]);
    expect(mapMetricKey(s, 'critic/Qwen3-4B_Solver Agent/score/mean')).toEqual([{ key: 'drmas/critic/Qwen3-4B_Solver Agent/score/mean', via: 'engine' }]);
    expect(mapMetricKey(s, 'val/avg@1').map((m) => m.key)).toEqual(['eval/system/avg@1', 'eval/system/accuracy']);
    // A shared worker group trains several agents: its norm is no one agent's.
    const shared = { ...s, agents: DRMAS_AGENTS.map((a) => ({ ...a, wgId: 'Qwen3-4B_SolverAgent_VerifierAgent_CorrectorAgent' })) };
    expect(mapMetricKey(shared, 'actor/Qwen3-4B_SolverAgent_VerifierAgent_CorrectorAgent/grad_norm')[0].via).toBe('engine');
  });

  it('derives per-agent reward and advantage from dumped turns, without the padding copies (hand-computed)', () => {
    const t = (agent: string | null, reward: number, advantage: number, duplicate: boolean, formatValid = true) => ({ kind: 'turn', split: 'train', agent, reward, advantage, duplicate, formatValid }) as unknown as TurnRecord;
    const metrics = derivedStepMetrics([t('solver', 1, 1, false), t('solver', 0, -1, false, false), t('solver', 0, -1, true), t('verifier1', 1, 0.5, false), t(null, 5, 5, false)]);
    expect(metrics).toEqual({
      'solver/reward/mean': 0.5,
      'solver/reward/std': 0.5,
      'solver/advantage/mean': 0,
      'solver/advantage/std': 1,
      'solver/format_valid': 0.5,
      'solver/samples': 2,
      'verifier1/reward/mean': 1,
      'verifier1/reward/std': 0,
      'verifier1/advantage/mean': 0.5,
      'verifier1/advantage/std': 0,
      'verifier1/format_valid': 1,
      'verifier1/samples': 1,
    });
  });
});

describe('following from a cursor', () => {
  it('takes a step\'s dump only when complete, never a half-written line, and resumes without loss or duplication', () => {
    const runDir = path.join(tmp.dir, 'run-cursor');
    const s = spec('verl', runDir, { dumpOrder: 'v1', uid: true, consoleActor: 'TaskRunnerV1' });
    fs.mkdirSync(`${runDir}/attempt-1/rollout`, { recursive: true });
    fs.mkdirSync(`${runDir}/attempt-1/validation`, { recursive: true });
    const line = (step: number, i: number) => `{"input": "q${i}", "output": "o${i}", "gts": "1", "score": 1.0, "step": ${step}, "uid": "u${i}-x_${i % 2}_0"}`;
    const write = (dir: string, step: number, lines: string[], tail = '') => fs.writeFileSync(`${runDir}/attempt-1/${dir}/${step}.jsonl`, lines.join('\n') + (lines.length ? '\n' : '') + tail);
    write('validation', 0, [line(0, 0), line(0, 1)]);
    write('rollout', 1, [line(1, 0), line(1, 1)], line(1, 2).slice(0, 20));
    fs.writeFileSync(`${runDir}/attempt-1/metrics.jsonl`, '{"step":0,"data":{"val-core/marsrl/math/acc/mean@1":0.5}}\n{"step":1,"data":{"actor/grad_norm":0.2');
    const running = { status: 'RUNNING' as const, message: null, error_type: null, driver_exit_code: null };
    const log1 = '(TaskRunnerV1 pid=1) Dumped generations to ' + `${runDir}/attempt-1/validation/0.jsonl\n` + '(TaskRunnerV1 pid=1) step:0 - x:1\n(TaskRunnerV1 pid=1) partial';
    let r = followAttempt(s, initialFollowState(), { job: running, log: log1, now: 1 });
    const turns = () => r.records.filter((x) => x.kind === 'turn') as TurnRecord[];
    // validation/0 is proven by the log; rollout/1 is not (its last line is still being written).
    expect(turns().map((t) => `${t.split}/${t.step}/${t.prompt}`)).toEqual(['test/0/q0', 'test/0/q1']);
    expect(r.records.filter((x) => x.kind === 'metric').map((m) => (m as { key: string }).key)).toEqual(['eval/system/accuracy', 'eval/solver/accuracy']);
    expect(r.records.filter((x) => x.kind === 'log').map((x) => (x as { text: string }).text).join('')).toBe(log1.slice(0, log1.lastIndexOf('\n') + 1));
    expect(r.pendingDumps).toBe(1);
    // The Studio is killed here; the cursor survives as JSON.
    const saved = JSON.parse(JSON.stringify(r.state));
    write('rollout', 1, [line(1, 0), line(1, 1), line(1, 2)]);
    write('validation', 2, [line(2, 0)]);
    fs.appendFileSync(`${runDir}/attempt-1/metrics.jsonl`, '}}\n');
    r = followAttempt(s, saved, { job: running, log: `${log1}\n`, now: 2 });
    expect(turns().map((t) => `${t.split}/${t.step}/${t.prompt}`)).toEqual(['train/1/q0', 'train/1/q1', 'train/1/q2']);
    expect(turns().map((t) => [t.group, t.sampleIndex])).toEqual([['u0-x', 0], ['u1-x', 1], ['u2-x', 0]]);
    expect(r.records.filter((x) => x.kind === 'metric').map((m) => [(m as { key: string }).key, (m as { step: number }).step])).toEqual([['solver/grad_norm', 1]]);
    // validation/2 is the newest file: not proven until the job ends.
    expect(r.pendingDumps).toBe(1);
    const ended = followAttempt(s, r.state, { job: { ...running, status: 'SUCCEEDED', driver_exit_code: 0 }, log: `${log1}\n`, now: 3 });
    expect((ended.records.filter((x) => x.kind === 'turn') as TurnRecord[]).map((t) => `${t.split}/${t.step}`)).toEqual(['test/2']);
    expect(ended.records.find((x) => x.kind === 'status')).toMatchObject({ status: 'SUCCEEDED' });
    expect(ended.pendingDumps).toBe(0);
  });

  it('takes the complete lines of an unproven dump once the job FAILED, and says what was left out', () => {
    const runDir = path.join(tmp.dir, 'run-failed');
    const s = spec('verl', runDir);
    fs.mkdirSync(`${runDir}/attempt-1/rollout`, { recursive: true });
    fs.writeFileSync(`${runDir}/attempt-1/rollout/1.jsonl`, '{"input": "a", "output": "b", "gts": "1", "score": 0.0, "step": 1}\n{"input": "c", "out');
    const r = followAttempt(s, initialFollowState(), { job: { status: 'FAILED', message: 'Job entrypoint command failed with exit code 1', error_type: 'JOB_ENTRYPOINT_COMMAND_ERROR', driver_exit_code: 1 }, log: null, now: 1 });
    expect(r.records.filter((x) => x.kind === 'turn')).toHaveLength(1);
    const warning = r.records.find((x) => x.kind === 'warning');
    expect(warning).toMatchObject({ code: 'partial_dump', source: { file: 'rollout/1.jsonl', line: 2 } });
    expect((warning as { message: string }).message).toMatch(/the job ended before it was complete; 1 complete lines taken, 19 bytes of an unfinished line left out/);
  });

  it('marks DrMAS turns without agent ids "agent unknown", once, never guessed', () => {
    const runDir = path.join(tmp.dir, 'run-nohook');
    const s = spec('drmas', runDir, { hook: false });
    fs.mkdirSync(`${runDir}/attempt-1/rollout`, { recursive: true });
    const verifierText = 'You are a \\"Verifier Agent\\".';
    fs.writeFileSync(`${runDir}/attempt-1/rollout/1.jsonl`, `{"input": "${verifierText}", "output": "<verify>approve</verify>", "score": 1.0, "step": 1}\n{"input": "x", "output": "y", "score": 0.0, "step": 1}\n`);
    fs.writeFileSync(`${runDir}/attempt-1/rollout/2.jsonl`, '{"input": "x", "output": "y", "score": 0.0, "step": 2}\n');
    const r = followAttempt(s, initialFollowState(), { job: null, log: null, now: 1, finished: true });
    const turns = r.records.filter((x) => x.kind === 'turn') as TurnRecord[];
    expect(turns).toHaveLength(3);
    expect(turns.every((t) => t.agent === null && t.role === null)).toBe(true);
    const warnings = r.records.filter((x) => x.kind === 'warning');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ code: 'agent_unknown' });
    // No per-agent metric is derived from turns of unknown agents.
    expect(r.records.filter((x) => x.kind === 'metric')).toHaveLength(0);
  });

  it('reports a checkpoint once the tracker reached it, with the folder the model tools open, and one deleted later', () => {
    const runDir = path.join(tmp.dir, 'run-ckpt');
    const ck = `${runDir}/checkpoints`;
    const mk = (rel: string, files: string[]) => {
      fs.mkdirSync(path.join(ck, rel), { recursive: true });
      for (const f of files) fs.writeFileSync(path.join(ck, rel, f), '{}');
    };
    // DrMAS: one folder per worker group (a space in its name); weights in huggingface/ only with 'hf_model'.
    mk('global_step_2/actor/Qwen3-4B_Solver Agent', ['model_world_size_1_rank_0.pt', 'config.json']);
    mk('global_step_2/actor/Qwen3-4B_Verifier Agent/huggingface', ['config.json', 'model.safetensors']);
    mk('global_step_4/actor/Qwen3-4B_Solver Agent', ['model_world_size_1_rank_0.pt', 'config.json']);
    mk('global_step_6/actor/Qwen3-4B_Solver Agent', ['model_world_size_1_rank_0.pt']);
    fs.writeFileSync(path.join(ck, 'latest_checkpointed_iteration.txt'), '4');
    const s = spec('drmas', runDir);
    const first = followAttempt(s, initialFollowState(), { job: null, log: null, now: 1 });
    const cks = first.records.filter((r) => r.kind === 'checkpoint') as { step: number; policies: { wgId: string; roles: string[]; hfDir: string | null }[] }[];
    // global_step_6 exists but the tracker says 4: still being written.
    expect(cks.map((c) => c.step)).toEqual([2, 4]);
    expect(cks[0].policies.map((p) => [p.wgId, p.roles, p.hfDir === null ? null : path.relative(ck, p.hfDir)])).toEqual([
      ['Qwen3-4B_Solver Agent', ['solver'], null],
      ['Qwen3-4B_Verifier Agent', ['verifier'], path.join('global_step_2', 'actor', 'Qwen3-4B_Verifier Agent', 'huggingface')],
    ]);
    fs.rmSync(path.join(ck, 'global_step_2'), { recursive: true });
    fs.writeFileSync(path.join(ck, 'latest_checkpointed_iteration.txt'), '6');
    const second = followAttempt(s, first.state, { job: null, log: null, now: 2 });
    expect(second.records.filter((r) => r.kind.startsWith('checkpoint')).map((r) => [r.kind, (r as { step: number }).step])).toEqual([['checkpoint', 6], ['checkpoint_removed', 2]]);
  });
});
