/**
 * Engine plans (issue 38): the Studio's settings as veRL's and DrMAS's command lines, checked
 * against the engines' own rules (their code is cited beside each expectation) and against the
 * keys each release's config accepts (resources/engines/*\/keys-*.json).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { EngineSchema } from '../../src-main/engine/config/engine';
import { formatValue, float, hydraRefusal, loadKeySet, parseOverride, pythonFloatRepr } from '../../src-main/engine/engines/hydra';
import { EnginePlanError, type EnginePlan } from '../../src-main/engine/engines/types';
import { drmasWorkerGroups } from '../../src-main/engine/engines/drmas/agents';
import { getEngine } from '../../src-main/engine/engines/registry';
import { contextOf, planDoc, presetDoc, probeOf } from '../helpers/engines';
import { tempDir } from '../helpers/tmp';

const tmp = tempDir('marsrl-engine-plan-');
afterAll(tmp.cleanup);
const root = tmp.dir;
const MODEL = '/models/Qwen3-4B';

function verl(over: Record<string, unknown> = {}, version = '0.7.1'): EnginePlan {
  return planDoc(presetDoc('verl-grpo', { engine: { python: '/opt/verl/bin/python', model: MODEL }, ...over }), contextOf(root, { probe: probeOf({ verl: version }) }));
}

function drmas(over: Record<string, unknown> = {}): EnginePlan {
  return planDoc(presetDoc('drmas-marsrl', { engine: { python: '/opt/drmas/bin/python', model: MODEL, working_dir: '/opt/DrMAS' }, ...over }), contextOf(root, { probe: probeOf({ verl: '0.3.1.dev', drmas: true, drmasRoot: '/opt/DrMAS' }) }));
}

function refusals(fn: () => unknown): Record<string, string> {
  try {
    fn();
  } catch (error) {
    if (error instanceof EnginePlanError) return Object.fromEntries(error.issues.map((i) => [i.path, i.message]));
    throw error;
  }
  throw new Error('the plan was not refused');
}

/** The overrides as a map key → value text (the mode kept in the key: `+data.x`). */
function overrides(plan: EnginePlan): Map<string, string> {
  return new Map(plan.overrides.map((o) => [o.slice(0, o.indexOf('=')), o.slice(o.indexOf('=') + 1)]));
}

describe('Hydra values and the shell line Ray runs', () => {
  it('writes values as Hydra reads them back', () => {
    expect(formatValue(8)).toBe('8');
    expect(formatValue(float(1))).toBe('1.0');
    expect(formatValue(float(1e-6))).toBe('1e-06');
    expect(formatValue(float(0.5))).toBe('0.5');
    expect(formatValue(true)).toBe('True');
    expect(formatValue(null)).toBe('null');
    expect(formatValue('/abs/run-1/data/train.parquet')).toBe('/abs/run-1/data/train.parquet');
    // A string that reads as another type, or holds grammar characters, is quoted.
    expect(formatValue('true')).toBe("'true'");
    expect(formatValue('1.5')).toBe("'1.5'");
    expect(formatValue('Solver Agent')).toBe("'Solver Agent'");
    expect(formatValue("it's")).toBe("'it\\'s'");
    expect(formatValue(['Solver Agent', 'Verifier Agent'])).toBe("['Solver Agent','Verifier Agent']");
  });

  it('writes floats as Python repr does (against a table of Python 3.11 outputs)', () => {
    // repr() in CPython 3.11 of each value.
    const table: [number, string][] = [[1e-6, '1e-06'], [0.0001, '0.0001'], [1.5e-5, '1.5e-05'], [2e-7, '2e-07'], [123.456, '123.456'], [1e16, '1e+16'], [1234567890123456.0, '1234567890123456.0'], [0.1, '0.1'], [-0.25, '-0.25'], [100.0, '100.0']];
    for (const [x, repr] of table) expect(pythonFloatRepr(x)).toBe(repr);
  });

  it('shell-quotes every planned argument so /bin/sh hands the engine the exact argv', () => {
    for (const plan of [verl(), drmas()]) {
      const line = plan.entrypoint.replace(/^cd \S+ && /, '');
      // /bin/sh parses the line; printf shows each argument on its own line.
      const out = execFileSync('/bin/sh', ['-c', `printf '%s\\n' ${line.slice(line.indexOf(' ') + 1)}`], { encoding: 'utf8' });
      expect(out.split('\n').slice(0, -1)).toEqual(plan.argv.slice(1));
    }
  });

  it('refuses an override the way Hydra does (config_loader_impl.py _apply_overrides_to_config)', () => {
    const keys = loadKeySet('verl', '0.7.1').keys;
    expect(hydraRefusal(parseOverride('trainer.max_ckpt_to_keep=2'), keys)).toMatch(/^Could not override 'trainer.max_ckpt_to_keep'. To append to your config use \+trainer.max_ckpt_to_keep=2/);
    expect(hydraRefusal(parseOverride('+trainer.total_epochs=2'), keys)).toMatch(/^Could not append to config. An item is already at 'trainer.total_epochs'/);
    // `+` on a null key or under an empty mapping, and `++`, are accepted.
    expect(hydraRefusal(parseOverride('+trainer.max_actor_ckpt_to_keep=2'), keys)).toBeNull();
    expect(hydraRefusal(parseOverride('+data.apply_chat_template_kwargs.enable_thinking=False'), keys)).toBeNull();
    expect(hydraRefusal(parseOverride('++trainer.anything=1'), keys)).toBeNull();
    expect(hydraRefusal(parseOverride('hydra.run.dir=/x'), keys)).toBeNull();
  });
});

describe('verl-grpo: veRL GRPO on the math task, one policy', () => {
  it('maps the Studio settings onto veRL keys', () => {
    const plan = verl();
    const o = overrides(plan);
    const runDir = path.posix.join(root, 'run-42-1a2b3c4d');
    expect(plan.argv.slice(0, 3)).toEqual(['/opt/verl/bin/python', '-m', 'verl.trainer.main_ppo']);
    expect(o.get('algorithm.adv_estimator')).toBe('grpo');
    expect(o.get('actor_rollout_ref.rollout.n')).toBe('8'); // rollout.solver_group
    expect(o.get('data.train_batch_size')).toBe('16'); // rollout.problems_per_step
    expect(o.get('actor_rollout_ref.actor.ppo_mini_batch_size')).toBe('16'); // 128 turns / 8 samples per prompt
    expect(o.get('data.max_response_length')).toBe('1024');
    expect(o.get('actor_rollout_ref.actor.optim.lr')).toBe('1e-06');
    expect(o.get('actor_rollout_ref.model.path')).toBe(MODEL);
    expect(o.get('trainer.total_training_steps')).toBe('100');
    // 8000 problems / 16 per step = 500 batches per epoch: one epoch covers 100 steps.
    expect(o.get('trainer.total_epochs')).toBe('1');
    expect(o.get('trainer.save_freq')).toBe('20');
    expect(o.get('trainer.test_freq')).toBe('10');
    expect(o.get('trainer.resume_mode')).toBe('auto');
    expect(o.get('trainer.logger')).toBe('[console,file]');
    expect(o.get('algorithm.norm_adv_by_std_in_grpo')).toBe('True');
    // veRL 0.7.1 reads the reward function from reward.custom_reward_function (legacy keys migrated).
    expect(o.get('reward.custom_reward_function.path')).toBe(`${runDir}/attempt-1/code/marsrl_reward.py`);
    expect(o.has('custom_reward_function.path')).toBe(false);
    // Every path the engine gets is absolute; metrics and dumps per attempt, checkpoints per run.
    expect(o.get('trainer.default_local_dir')).toBe(`${runDir}/checkpoints`);
    expect(o.get('trainer.rollout_data_dir')).toBe(`${runDir}/attempt-1/rollout`);
    expect(o.get('trainer.validation_data_dir')).toBe(`${runDir}/attempt-1/validation`);
    expect(o.get('hydra.run.dir')).toBe(`${runDir}/attempt-1/hydra`);
    expect(plan.runtimeEnv.env_vars.VERL_FILE_LOGGER_PATH).toBe(`${runDir}/attempt-1/metrics.jsonl`);
    expect(plan.submissionId).toBe('marsrl-42-1a2b3c4d-a1');
    expect(plan.metadata).toEqual({ marsrl_run: '42', marsrl_attempt: '1', marsrl_store: '1a2b3c4d', marsrl_engine: 'verl' });
    expect(Object.values(plan.metadata).every((v) => typeof v === 'string')).toBe(true);
    expect(plan.follow).toMatchObject({ engine: 'verl', dumpOrder: 'legacy', uid: false, metricSource: 'file', consoleActor: 'TaskRunner', valN: 1 });
  });

  it('follows the reward keys and writers of each veRL release', () => {
    expect(overrides(verl({}, '0.7.0')).get('custom_reward_function.path')).toMatch(/marsrl_reward\.py$/);
    expect(overrides(verl({}, '0.6.1')).has('reward.custom_reward_function.path')).toBe(false);
    const v9 = verl({}, '0.9.0');
    expect(overrides(v9).get('reward.custom_reward_function.path')).toMatch(/marsrl_reward\.py$/);
    expect(v9.follow).toMatchObject({ dumpOrder: 'v1', uid: true, consoleActor: 'TaskRunnerV1' });
    expect(verl({ engine: { python: '/p', model: MODEL, overrides: ['trainer.use_v1=False'] } }, '0.9.0').follow).toMatchObject({ dumpOrder: 'legacy', uid: false, consoleActor: 'TaskRunner' });
    expect(verl({}, '0.10.2').warnings.join('\n')).toMatch(/newer than the newest the Studio knows \(0\.9\.0\)/);
    expect(refusals(() => verl({}, '0.5.0'))['engine.version']).toMatch(/no file logger \(added in 0\.6\.0\)/);
  });

  it('refuses what veRL would refuse, naming the field (verl/utils/config.py, fsdp_workers.py)', () => {
    expect(refusals(() => verl({ rollout: { rounds: 1 } }))['rollout.rounds']).toMatch(/one policy/);
    expect(refusals(() => verl({ optimization: { minibatch_size: 100 } }))['optimization.minibatch_size']).toMatch(/multiple of rollout.solver_group \(8\)/);
    expect(refusals(() => verl({ optimization: { minibatch_size: 256 } }))['optimization.minibatch_size']).toMatch(/train_batch_size \(16\) must be >= actor.ppo_mini_batch_size \(32/);
    expect(refusals(() => verl({ engine: { python: '/p', model: MODEL, micro_batch_per_gpu: 3 } }))['engine.micro_batch_per_gpu']).toMatch(/normalized ppo_mini_batch_size \(128 samples per GPU\) should be divisible by ppo_micro_batch_size_per_gpu \(3\)/);
    expect(refusals(() => verl({ engine: { python: '/p', model: MODEL, gpus_per_node: 3 } }))['rollout.problems_per_step']).toMatch(/16 × 8 = 128 divisible by the 3 GPUs/);
    expect(refusals(() => verl({ policies: { solver: { optimizer: { grad_clip: 0 } } } }))['policies.solver.optimizer.grad_clip']).toMatch(/always clips/);
    expect(refusals(() => verl({ advantage: { std: 'population' } }))['advantage.std']).toMatch(/unbiased/);
    expect(refusals(() => verl({ advantage: { eps: 1e-8 } }))['advantage.eps']).toMatch(/1e-6/);
    expect(refusals(() => verl({ task: { family: 'sort' } }))['task.family']).toMatch(/set task.family=math/);
    expect(refusals(() => verl({ engine: { python: '/p' } }))['engine.model']).toMatch(/--set engine.model=/);
    expect(refusals(() => planDoc(presetDoc('verl-grpo', { engine: { model: MODEL } }), contextOf(root, { probe: probeOf({ verl: null }) })))['engine.python']).toMatch(/veRL is not importable/);
  });

  it('checks raw overrides against the release\'s keys, and lets one replace a planned key', () => {
    const refused = refusals(() => verl({ engine: { python: '/p', model: MODEL, overrides: ['trainer.save_freq=5', 'trainer.max_ckpt_to_keep=2'] } }));
    expect(refused['engine.overrides.1']).toMatch(/^Could not override 'trainer.max_ckpt_to_keep'\. To append to your config use \+trainer.max_ckpt_to_keep=2/);
    expect(refused['engine.overrides.0']).toBeUndefined();
    const plan = verl({ engine: { python: '/p', model: MODEL, overrides: ['trainer.save_freq=5', '+trainer.max_actor_ckpt_to_keep=2'] } });
    expect(plan.overrides.filter((o) => o.startsWith('trainer.save_freq='))).toEqual(['trainer.save_freq=5']);
    expect(plan.overrides).toContain('+trainer.max_actor_ckpt_to_keep=2');
    expect(refusals(() => verl({ engine: { python: '/p', model: MODEL, overrides: ['not an override'] } }))['engine.overrides.0']).toMatch(/is not a Hydra override/);
  });

  it('plans only keys the release accepts, for every vendored release', () => {
    for (const version of ['0.6.1', '0.7.0', '0.7.1', '0.8.0', '0.9.0']) {
      const plan = verl({}, version);
      const keys = loadKeySet('verl', version === '0.6.1' ? '0.6.1' : version).keys;
      for (const text of plan.overrides) expect(hydraRefusal(parseOverride(text), keys), `${version}: ${text}`).toBeNull();
    }
  });
});

describe('drmas-marsrl: Solver, Verifier and Corrector as DrMAS agents', () => {
  it('maps agents, policies and Dr. MAS normalization onto DrMAS keys', () => {
    const plan = drmas();
    const o = overrides(plan);
    expect(plan.entrypoint.startsWith("cd /opt/DrMAS && /opt/drmas/bin/python -m verl.trainer.main_ppo ")).toBe(true);
    expect(o.get('agent.agent_ids')).toBe("['Solver Agent','Verifier Agent','Corrector Agent']");
    expect(o.get('agent.model_ids')).toBe(`[${MODEL},${MODEL},${MODEL}]`);
    expect(o.get('agent.model_sharing')).toBe('False');
    expect(o.get('agent.orchestra_type')).toBe('math');
    expect(o.get('agent.orchestra.math.max_loop_num')).toBe('3'); // rounds 2 + the Solver
    expect(o.get('algorithm.group_by_agent_id')).toBe('True'); // advantage.mode agentwise
    expect(o.get('actor_rollout_ref.rollout.n')).toBe('1'); // main_ppo.py:160
    expect(o.get('env.rollout.n')).toBe('8'); // the group
    expect(o.get('+agent.agent_specific_parameters.actor.optim.lr')).toBe('[1e-06,1e-06,1e-06]');
    expect(o.get('actor_rollout_ref.actor.optim.lr')).toBe('null');
    expect(o.get('actor_rollout_ref.actor.use_invalid_action_penalty')).toBe('True');
    expect(o.get('actor_rollout_ref.actor.invalid_action_penalty_coef')).toBe('0.1');
    expect(o.get('data.val_batch_size')).toBe('110');
    expect(o.get('actor_rollout_ref.actor.checkpoint.contents')).toBe('[model,optimizer,extra,hf_model]');
    expect(o.has('trainer.validation_data_dir')).toBe(false);
    // DrMAS refuses the file logger (tracking.py:36): console and TensorBoard only.
    expect(o.get('trainer.logger')).toBe('[console,tensorboard]');
    expect(plan.runtimeEnv.worker_process_setup_hook).toBe('marsrl_drmas_hook.install');
    expect(plan.runtimeEnv.env_vars.MARSRL_DRMAS_ORCHESTRA).toBe('marsrl');
    expect(plan.runtimeEnv.env_vars.PYTHONPATH).toBe(`${plan.layout.codeDir}:/opt/DrMAS:\${PYTHONPATH}`);
    // DrMAS's ray.init sets these four; a job value would conflict (runtime env merge).
    for (const k of ['TOKENIZERS_PARALLELISM', 'NCCL_DEBUG', 'VLLM_LOGGING_LEVEL', 'VLLM_ALLOW_RUNTIME_LORA_UPDATING']) expect(plan.runtimeEnv.env_vars[k]).toBeUndefined();
    expect(plan.follow.agents).toEqual([
      { engineId: 'Solver Agent', wgId: 'Qwen3-4B_Solver Agent', role: 'solver' },
      { engineId: 'Verifier Agent', wgId: 'Qwen3-4B_Verifier Agent', role: 'verifier' },
      { engineId: 'Corrector Agent', wgId: 'Qwen3-4B_Corrector Agent', role: 'corrector' },
    ]);
    expect(plan.files.map((f) => path.posix.basename(f.path))).toEqual(['train.parquet', 'test.parquet', 'marsrl_drmas_hook.py']);
    for (const text of plan.overrides) expect(hydraRefusal(parseOverride(text), loadKeySet('drmas', '19c632bc').keys), text).toBeNull();
  });

  it('names worker groups as DrMAS build_wg_ids does (agent_system/agent/utils.py)', () => {
    expect(drmasWorkerGroups(['Solver Agent', 'Verifier Agent'], ['Qwen/Qwen3-4B', 'Qwen/Qwen3-4B'], false).map((g) => g.wgId)).toEqual(['Qwen3-4B_Solver Agent', 'Qwen3-4B_Verifier Agent']);
    expect(drmasWorkerGroups(['Solver Agent', 'Verifier Agent', 'Corrector Agent'], ['/m/a', '/m/a', '/m/b'], true).map((g) => [g.wgId, g.agentIds])).toEqual([
      ['a_SolverAgent_VerifierAgent', ['Solver Agent', 'Verifier Agent']],
      ['b_CorrectorAgent', ['Corrector Agent']],
    ]);
  });

  it('shares weights only as DrMAS can: by model folder, all or nothing', () => {
    const shared = drmas({ policies: { shared: { optimizer: { lr: 2e-6 } } }, agents: { solver: 'shared', verifier: 'shared', corrector: 'shared' } });
    expect(overrides(shared).get('agent.model_sharing')).toBe('True');
    expect(shared.follow.agents.map((a) => a.wgId)).toEqual(['Qwen3-4B_SolverAgent_VerifierAgent_CorrectorAgent', 'Qwen3-4B_SolverAgent_VerifierAgent_CorrectorAgent', 'Qwen3-4B_SolverAgent_VerifierAgent_CorrectorAgent']);
    expect(overrides(shared).get('+agent.agent_specific_parameters.actor.optim.lr')).toBe('[2e-06,2e-06,2e-06]');
    // Solver and Verifier share a policy, the Corrector has its own on the same folder: DrMAS would merge all three.
    const mixed = refusals(() => drmas({ policies: { shared: {}, corrector: {} }, agents: { solver: 'shared', verifier: 'shared', corrector: 'corrector' } }));
    expect(Object.keys(mixed).some((k) => k.startsWith('agents.'))).toBe(true);
    expect(Object.values(mixed).join('\n')).toMatch(/DrMAS shares weights by model/);
    const separate = drmas({ policies: { shared: {}, corrector: {} }, agents: { solver: 'shared', verifier: 'shared', corrector: 'corrector' }, engine: { python: '/p', working_dir: '/opt/DrMAS', model: { shared: '/m/base', corrector: '/m/other' } } });
    expect(overrides(separate).get('agent.model_ids')).toBe('[/m/base,/m/base,/m/other]');
    expect(separate.follow.agents.map((a) => a.wgId)).toEqual(['base_SolverAgent_VerifierAgent', 'base_SolverAgent_VerifierAgent', 'other_CorrectorAgent']);
  });

  it('maps advantage modes, and refuses the ones DrMAS has not', () => {
    expect(overrides(drmas({ advantage: { mode: 'global' } })).get('algorithm.group_by_agent_id')).toBe('False');
    const noStd = overrides(drmas({ advantage: { mode: 'no-std' } }));
    expect([noStd.get('algorithm.group_by_agent_id'), noStd.get('algorithm.norm_adv_by_std_in_grpo')]).toEqual(['True', 'False']);
    expect(refusals(() => drmas({ advantage: { mode: 'agent-mean' } }))['advantage.mode']).toMatch(/no agent-mean/);
    expect(refusals(() => drmas({ reward: { scheme: 'decoupled' } }))['reward.scheme']).toMatch(/episode reward/);
    expect(refusals(() => drmas({ reward: { scale: { corrector: 4 } } }))['reward.scale.corrector']).toMatch(/no per-role reward scale/);
    expect(refusals(() => drmas({ engine: { python: '/p', model: MODEL, working_dir: '/opt/DrMAS', drmas: { hook: false } } }))['engine.drmas.hook']).toMatch(/DrMAS has no Corrector without it/);
  });

  it("runs DrMAS's own loop without a Corrector when asked (orchestra math)", () => {
    const plan = drmas({ engine: { python: '/p', model: MODEL, working_dir: '/opt/DrMAS', drmas: { orchestra: 'math', hook: false } } });
    expect(overrides(plan).get('agent.agent_ids')).toBe("['Solver Agent','Verifier Agent']");
    expect(plan.runtimeEnv.worker_process_setup_hook).toBeUndefined();
    expect(plan.follow.hook).toBe(false);
  });

  it('needs the DrMAS checkout when the interpreter does not have it installed', () => {
    const refused = refusals(() => planDoc(presetDoc('drmas-marsrl', { engine: { python: '/p', model: MODEL } }), contextOf(root, { probe: probeOf({ verl: '0.7.1' }) })));
    expect(refused['engine.working_dir']).toMatch(/DrMAS's checkout/);
    expect(refused['engine.kind']).toMatch(/has veRL 0\.7\.1, not DrMAS/);
  });
});

describe('the engine block', () => {
  it('takes a token by variable name only, and addresses by dashboard URL', () => {
    expect(EngineSchema.safeParse({ kind: 'verl', address: 'http://10.0.0.5:8265', token_env: 'RAY_AUTH_TOKEN' }).success).toBe(true);
    expect(EngineSchema.safeParse({ kind: 'verl', address: 'http://10.0.0.5:8265', token_env: 'abc.def-123' }).success).toBe(false);
    expect(EngineSchema.safeParse({ kind: 'verl', token_env: 'RAY_AUTH_TOKEN' }).success).toBe(false); // local needs none
    expect(EngineSchema.safeParse({ kind: 'verl', address: 'http://10.0.0.5:8265/api/jobs' }).success).toBe(false);
    expect(EngineSchema.safeParse({ kind: 'verl', address: '10.0.0.5:8265' }).success).toBe(false);
    expect(EngineSchema.safeParse({ kind: 'verl', model: 'models/qwen' }).success).toBe(true); // org/name: a hub id
    expect(EngineSchema.safeParse({ kind: 'verl', model: './models/qwen' }).success).toBe(false);
    expect(EngineSchema.safeParse({ kind: 'drmas', working_dir: 'DrMAS' }).success).toBe(false);
    expect(() => getEngine('megatron')).toThrow(/unknown engine "megatron"; known engines: studio \(the Studio's own trainer\), verl, drmas/);
  });

  it('refuses a run root this machine cannot see', () => {
    const refused = refusals(() => verl({ engine: { python: '/p', model: MODEL, address: 'http://10.0.0.5:8265', run_root: '/nfs/not-mounted-here' } }));
    expect(refused['engine.run_root']).toMatch(/does not exist on this machine/);
    fs.mkdirSync(path.join(root, 'mnt'), { recursive: true });
    const plan = verl({ engine: { python: '/p', model: MODEL, address: 'http://10.0.0.5:8265', run_root: '/nfs/runs', mount: path.join(root, 'mnt') } });
    expect(plan.layout.runDir).toBe('/nfs/runs/run-42-1a2b3c4d');
    expect(plan.layout.localRunDir).toBe(path.join(root, 'mnt', 'run-42-1a2b3c4d'));
  });
});
