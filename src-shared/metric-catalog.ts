/**
 * What every logged metric means: one registry of descriptions (what it measures, its unit, the
 * range its values can take, where it comes from) read by the dashboard's panel titles and
 * tooltips, the compare view's metric picker and band clipping, and the study report (issue 18,
 * "Every term explained where it appears").
 *
 * It lives in the pure shared layer (src-shared, no imports), so the browser and the engine read
 * the same words.
 *
 * Keys are slash-namespaced (DESIGN.md): `<agent>/<name>` for training batches, `eval/…` for
 * held-out evaluation (with the scopes `sampled/`, `fixed/` and `control/<which>/`), `pretrain/…`
 * for the warm start, `perf/` and `pipeline/` for timings. A key is described by its last
 * segment(s) and qualified by its scope, so a metric the trainer logs for a new agent (verifier3)
 * is described without a new entry.
 */

/** Units a chart axis is titled with; two lines share an axis only when their units match. */
export type MetricUnit =
  | 'share'
  | 'difference of shares'
  | 'count'
  | 'seconds'
  | 'tokens/s'
  | 'tokens'
  | 'reward'
  | 'advantage'
  | 'L2 norm'
  | 'nats'
  | 'ratio'
  | 'policy versions'
  | 'loss'
  | 'milliseconds'
  | 'bytes'
  /** A logged key no entry describes: no unit is claimed for it (issue 35: bytes were called "ratio"). */
  | 'value';

export interface MetricInfo {
  /** A short human title: "Verifier precision", "Tokens per second". */
  title: string;
  /** One or two sentences: what is measured, over which samples. */
  what: string;
  unit: MetricUnit;
  /** The values it can take, where bounded (a share is in [0, 1]); bands are clipped to it. */
  range?: readonly [number, number];
  /** Paper and equation, or the code that defines it, where there is one. */
  source?: string;
  /** Evaluation and warm-start series are not smoothed by default (they are few, and the value matters). */
  evaluation: boolean;
}

const SHARE: readonly [number, number] = [0, 1];
const MARSRL = 'MarsRL (arXiv 2511.11373)';
const DRMAS = 'Dr. MAS (Feng et al., github.com/langfengQ/DrMAS)';

type Base = Omit<MetricInfo, 'evaluation'>;

/** By the metric's own name: the key's last segment, or its last two for `reward/mean` and the like. */
const BY_NAME: Record<string, Base> = {
  accuracy: { title: 'Accuracy', what: "Share of problems whose final answer matches the reference (the agent's own answer for solver/correctors, the chain's last answer for system).", unit: 'share', range: SHARE },
  margin: { title: 'System − Solver accuracy', what: 'Held-out accuracy of the whole chain minus the Solver alone: what the Verifier and Corrector add (negative when they break more than they fix).', unit: 'difference of shares', range: [-1, 1], source: `${MARSRL}: the system-vs-Solver gain its Table 1 reports` },
  'reward/mean': { title: 'Reward (mean)', what: "Mean reward of the agent's samples in the batch. Decoupled rewards are 1 for a correct answer (solver, corrector) or a correct verdict (verifier), else 0, plus penalties.", unit: 'reward', source: `${MARSRL}, agent-specific rewards (§3)` },
  'reward/std': { title: 'Reward (std)', what: "Standard deviation of the agent's rewards in the batch.", unit: 'reward' },
  'advantage/mean': { title: 'Advantage (mean)', what: "Mean normalized advantage of the agent's samples; near 0 under per-group normalization.", unit: 'advantage', source: `${DRMAS}, Eq. 5 (agent-wise) vs GRPO's global baseline` },
  'advantage/std': { title: 'Advantage (std)', what: "Standard deviation of the agent's advantages; about 1 when the agent is normalized by its own σ_k.", unit: 'advantage', source: `${DRMAS}, Eq. 5` },
  grad_norm: { title: 'Gradient norm', what: "L2 norm of the agent's policy gradient per update, before clipping: the Dr. MAS diagnostic (spikes under global normalization).", unit: 'L2 norm', source: `${DRMAS}, §4 (gradient-norm curves)` },
  inflation: { title: 'Gradient inflation', what: "(σ_k² + (μ_k − μ)²) / σ²: how much larger the agent's gradient second moment is under one global baseline than under its own; 1 means no inflation. Sample-weighted, the agents average to 1.", unit: 'ratio', source: `${DRMAS}, Lemma 4.2` },
  entropy: { title: 'Entropy', what: "Mean per-token entropy of the agent's policy on its own samples.", unit: 'nats' },
  kl: { title: 'KL to reference', what: "Mean per-token KL divergence of the policy from its reference (the warm start).", unit: 'nats', source: 'GRPO (Shao et al. 2024, DeepSeekMath), Eq. 4 estimator' },
  loss: { title: 'Loss', what: 'Mean policy loss of the update (the warm start: mean cross-entropy per token).', unit: 'loss' },
  clip_fraction: { title: 'Clip fraction', what: 'Share of tokens whose probability ratio fell outside the PPO clip range.', unit: 'share', range: SHARE, source: 'PPO (Schulman et al. 2017), Eq. 7' },
  response_length: { title: 'Response length', what: "Mean length of the agent's outputs.", unit: 'tokens' },
  format_valid: { title: 'Well-formed outputs', what: "Share of the agent's outputs that parse in the task family's format.", unit: 'share', range: SHARE },
  samples: { title: 'Samples', what: 'Samples of this agent in the batch (the weight of its inflation factor).', unit: 'count' },
  staleness: { title: 'Staleness', what: 'Policy versions between the policy that generated the oldest sample of a batch and the policy it trains.', unit: 'policy versions', source: `${MARSRL}, agentic pipeline parallelism (§3.3)` },
  precision: { title: 'Verifier precision', what: 'Of the solutions the Verifier rejected, the share that were wrong.', unit: 'share', range: SHARE },
  recall: { title: 'Verifier recall', what: 'Of the wrong solutions, the share the Verifier rejected.', unit: 'share', range: SHARE },
  verdict_accuracy: { title: 'Verdict accuracy', what: 'Share of verdicts that match the truth of the solution judged (approve a correct one, reject a wrong one): the Verifier reward.', unit: 'share', range: SHARE, source: `${MARSRL}, Verifier reward` },
  fix_rate: { title: 'Corrector fix rate', what: 'Of the wrong answers the Corrector received, the share it turned correct.', unit: 'share', range: SHARE },
  break_rate: { title: 'Corrector break rate', what: 'Of the correct answers the Corrector received, the share it turned wrong.', unit: 'share', range: SHARE },
  answers: { title: 'Fixed set size', what: 'Answers in the fixed judged set (the Solver answers of the first evaluation, judged again at every evaluation).', unit: 'count' },
  wrong_share: { title: 'Wrong answers in the fixed set', what: 'Share of the fixed judged set that is wrong: the base rate precision and recall are read against.', unit: 'share', range: SHARE },
  tokens_per_s: { title: 'Tokens per second', what: 'Tokens generated per second of the step (rollout and update).', unit: 'tokens/s' },
  rollout_s: { title: 'Rollout time', what: 'Seconds the step spent generating (without waits, evaluation and gradient work).', unit: 'seconds' },
  update_s: { title: 'Update time', what: 'Seconds the step spent in policy updates.', unit: 'seconds' },
  step_s: { title: 'Step time', what: 'Wall-clock seconds of the whole step.', unit: 'seconds' },
  rollout_wait_s: { title: 'Rollout wait', what: 'Seconds the rollout worker waited for new weights.', unit: 'seconds', source: `${MARSRL}, pipeline (§3.3)` },
  trainer_idle_s: { title: 'Trainer idle', what: 'Seconds the trainer waited for rollouts.', unit: 'seconds', source: `${MARSRL}, pipeline (§3.3)` },
  rollout_gradient_s: { title: 'Gradient work on the rollout worker', what: 'Seconds of gradient computation the rollout worker took over from the trainer.', unit: 'seconds' },
  queued_batches: { title: 'Queued batches', what: 'Training batches waiting in the per-agent queues at the end of the step.', unit: 'count' },
  solver_score: { title: 'Warm-start Solver score', what: "Share of held-out problems the warm-started policy solves in the Solver's role.", unit: 'share', range: SHARE },
  verifier_score: { title: 'Warm-start Verifier score', what: "Share of verdicts the warm-started policy gets right in the Verifier's role.", unit: 'share', range: SHARE },
  // The served-model pool (issue #16; engine/served/pool.ts), as `pool/<endpoint>/<name>`.
  queue: { title: 'Pool queue', what: 'Requests waiting for a free slot of the endpoint (its concurrency limit reached) when the snapshot was taken.', unit: 'count' },
  in_flight: { title: 'Requests in flight', what: 'Requests the endpoint is answering when the snapshot was taken, over all its replicas.', unit: 'count' },
  latency_ms: { title: 'Request latency', what: 'Mean time from sending a request to its last byte (retries included, queue wait not), over the requests finished since the previous snapshot.', unit: 'milliseconds' },
  errors: { title: 'Failed attempts', what: 'Attempts that failed so far (429, 5xx, timeouts, cut streams, refused requests), retried or not; cumulative.', unit: 'count' },
  requests: { title: 'Requests', what: 'Requests sent to the endpoint so far; cumulative.', unit: 'count' },
  replicas_up: { title: 'Replicas in rotation', what: 'Replicas of the endpoint taking requests (a failing one is taken out and health-checked before it returns).', unit: 'count' },
  prompt_tokens: { title: 'Prompt tokens', what: "Prompt tokens the endpoint reported in its replies' usage so far; cumulative.", unit: 'tokens' },
  completion_tokens: { title: 'Completion tokens', what: "Generated tokens the endpoint reported in its replies' usage so far; cumulative.", unit: 'tokens' },
  // A reasoning-system run (engine/served/system-run.ts), as `system/<name>`.
  calls: { title: 'Agent calls', what: 'Agent calls a reasoning-system run made over all its attempts (an oracle verdict is not a call).', unit: 'count' },
  failed_calls: { title: 'Failed calls', what: "Calls of a reasoning-system run that failed after the endpoint's retries and counted against their chain's error budget.", unit: 'count' },
  failed_chains: { title: 'Failed chains', what: 'Chains of a reasoning-system run marked failed (over system.error_budget): no answer, counted wrong.', unit: 'count' },
  accepted: { title: 'Accepted by the loop', what: "Share of greedy chains MarsRL's loop accepted (system.approvals approving verdicts in a row) within system.max_iterations.", unit: 'share', range: SHARE, source: `${MARSRL}, public reasoning-system code` },
  // Device memory per policy (model/gpu-memory.ts), as `memory/<policy>/<name>`.
  weights_bytes: { title: 'Weight memory', what: "Bytes of the policy's weights resident on the tensor backend (and its frozen reference copy for the KL term, when there is one).", unit: 'bytes' },
  optimizer_bytes: { title: 'Optimizer memory', what: "Bytes of the policy's optimizer state (Adam's two moments) on the tensor backend.", unit: 'bytes' },
  judged_right_share: { title: 'Right solutions judged', what: "Share of the solutions the Verifier judged that were right: the base rate its verdicts are read against (far from 0.5, approving or rejecting everything pays unless advantage.verifier_class_balance is on).", unit: 'share', range: SHARE },
  corrector_score: { title: 'Warm-start Corrector score', what: "Share of wrong answers the warm-started policy repairs in the Corrector's role.", unit: 'share', range: SHARE },
};

/** avg@k and pass@k carry their k in the name. */
const AT_K = /^(avg|pass)@(\d+)$/;

/** Who a key is about, in words: `solver`, `verifier1`, `system`, `control/oracle_verifier`. */
function subjectWords(subject: string): string {
  if (subject === 'control/oracle_verifier') return 'control: an oracle Verifier (the true verdict) with the trained Corrector';
  if (subject === 'control/corrector_always') return 'control: the Corrector applied to every answer, no Verifier';
  if (subject === 'system') return 'the whole chain';
  if (subject.startsWith('pool/')) return `endpoint ${subject.slice('pool/'.length)} of the served-model pool`;
  return subject;
}

function scopeWords(scope: string): string | null {
  if (scope === 'sampled') return 'on sampled (temperature) chains rather than greedy ones';
  if (scope === 'fixed') return 'on the fixed judged set (the same Solver answers at every evaluation)';
  return null;
}

function baseOf(name: string): Base | null {
  const atK = AT_K.exec(name);
  if (atK) {
    const k = atK[2];
    return atK[1] === 'pass'
      ? { title: `pass@${k}`, what: `Share of problems with at least one correct answer among ${k} samples (unbiased estimator).`, unit: 'share', range: SHARE, source: 'Chen et al. 2021, "Evaluating Large Language Models Trained on Code", Eq. 1' }
      : { title: `avg@${k}`, what: `Mean share of correct answers over ${k} samples per problem.`, unit: 'share', range: SHARE, source: `${DRMAS}, evaluation` };
  }
  return BY_NAME[name] ?? null;
}

/**
 * The description of one metric key. Unknown names still get a description (the key itself, no
 * unit claimed beyond "value"), so a new metric is shown, only less explained.
 */
export function describeMetric(key: string): MetricInfo & { subject: string } {
  const parts = key.split('/');
  const phase = parts[0] === 'eval' || parts[0] === 'pretrain' ? parts[0] : null;
  const body = phase ? parts.slice(1) : parts;
  const two = body.slice(-2).join('/');
  const twoBase = body.length >= 2 ? BY_NAME[two] : undefined;
  const nameParts = twoBase ? 2 : 1;
  const name = body.slice(-nameParts).join('/');
  const base = twoBase ?? baseOf(name);
  const subject = body.slice(0, body.length - nameParts).join('/');
  const scope = body[0] === 'sampled' || body[0] === 'fixed' ? body[0] : '';
  const evaluation = phase !== null;
  if (!base) return { title: key, what: `Logged as ${key}; no description is registered for it.`, unit: 'value', evaluation, subject };

  const phaseWords = phase === 'eval' ? 'Held-out evaluation' : phase === 'pretrain' ? 'Warm start' : parts[0] === 'pool' ? 'Served models' : parts[0] === 'memory' ? 'Tensor memory' : 'Training batch';
  const who = subject.replace(/^(sampled|fixed)\/?/, '');
  // perf/ and pipeline/ are sections of the step, not someone the metric is about.
  const qualifiers = [scopeWords(scope), who && who !== 'perf' && who !== 'pipeline' ? `for ${subjectWords(who)}` : null].filter(Boolean);
  const what = `${phaseWords}${qualifiers.length ? ` (${qualifiers.join(', ')})` : ''}: ${base.what}`;
  return { ...base, what, evaluation, subject };
}

/** The unit as an axis title: "share (0–1)", "seconds". */
export function unitLabel(unit: MetricUnit): string {
  return unit === 'share' ? 'share (0–1)' : unit;
}

/** A tooltip's text for a key: title, what it is, unit and source on their own lines. */
export function metricTooltip(key: string): string {
  const info = describeMetric(key);
  return [`${info.title} — ${key}`, info.what, `Unit: ${unitLabel(info.unit)}`, info.source ? `Source: ${info.source}` : null].filter(Boolean).join('\n');
}
