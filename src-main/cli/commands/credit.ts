/**
 * `marsrl credit RUN [--turn ID]` (issue 40): counterfactual credit. Without --turn, how far the
 * run's advantages are from every alternative reward scheme and normalization mode, per agent
 * (averaged over steps; --json gives every step). With --turn, that turn's reward under each
 * scheme and advantage under each scheme × mode, the run's own marked.
 */
import type { CounterfactualCredit, CreditDivergence } from '#shared/contract';
import { StudioError } from '#shared/errors';
import { inertJson } from '../../engine/util/inert';
import { intFlag, UsageError } from '../args';
import { defineCommand, runArgument, withCliRun } from '../context';
import { table } from '../format';

const usage = `Usage: marsrl credit RUN [--turn ID] [--db PATH] [--json]

Counterfactual credit (issue 40), recomputed from the stored rewards by the code training uses.
Without --turn: per agent and alternative (reward scheme · normalization mode), the mean over
steps of |run's advantage − alternative's| and of the alternative's advantage std; the run's own
scheme and mode reproduce its stored advantages (max |Δ| shown). --json: every step.
With --turn ID: that turn's reward under each scheme and advantage under each scheme × mode.`;

const fmt = (x: number | null | undefined) => (x === null || x === undefined ? '—' : Number(x.toPrecision(4)).toString());

function meanOf(values: readonly (number | null)[]): number | null {
  const present = values.filter((v): v is number => v !== null);
  return present.length === 0 ? null : present.reduce((a, b) => a + b, 0) / present.length;
}

function divergenceText(d: CreditDivergence): string {
  const head = [
    `run ${d.runId}: scheme ${d.scheme}, mode ${d.mode}; ${d.turns} trained turns in ${d.groups} groups over ${d.steps.length} steps (${d.seconds.toFixed(3)} s)`,
    d.reproducible
      ? `stored advantages recomputed under ${d.scheme} · ${d.mode}: max |Δ| = ${d.maxStoredDifference.toExponential(2)}; rewards that differ when recomputed: ${d.rewardMismatches}`
      : `${d.scheme} · ${d.mode} is not a scheme and mode the Studio computes (a run made elsewhere): every mode is applied to the stored rewards`,
  ];
  if (d.turns === 0) return [...head, 'no trained turns: nothing to compare (held-out turns have no advantage)'].join('\n');
  const rows = d.series.map((s) => [`${s.scheme} · ${s.mode}${s.scheme === d.scheme && s.mode === d.mode ? ' (run)' : ''}`, s.agent, fmt(meanOf(s.meanAbsDiff)), fmt(meanOf(s.std))]);
  return [...head, '', table(['alternative', 'agent', 'mean |Δ|', 'mean std'], rows)].join('\n');
}

function turnText(c: CounterfactualCredit): string {
  const lines = [
    `turn ${c.turnId} (${c.agent}, step ${c.step}, episode ${c.episodeId}) of run ${c.runId}: stored reward ${fmt(c.stored.reward)}, advantage ${fmt(c.stored.advantage)}${c.stored.weight !== 1 ? ` (class-balance weight ${fmt(c.stored.weight)})` : ''}`,
    `group of ${c.group.length} turns; * marks the run's own scheme and mode`,
  ];
  if (c.note) lines.push(c.note);
  const rows = c.schemes.map((scheme) => [
    `${scheme}${scheme === c.scheme ? ' *' : ''}`,
    fmt(c.rewards[scheme]),
    ...c.modes.map((mode) => `${fmt(c.advantages[scheme]?.[mode])}${scheme === c.scheme && mode === c.mode ? ' *' : ''}`),
  ]);
  return [...lines, '', table(['scheme', 'reward', ...c.modes.map((m) => `A ${m}`)], rows)].join('\n');
}

export const creditCommand = defineCommand({
  name: 'credit',
  summary: "a run's counterfactual credit: rewards and advantages under every scheme and mode",
  usage,
  options: { turn: { type: 'string' } },
  maxPositionals: 1,
  async run({ values, positionals }, ctx) {
    const ref = runArgument(positionals, 'credit', usage);
    const turnId = intFlag('turn', values.turn, 1, Number.MAX_SAFE_INTEGER, usage);
    return withCliRun(values.db, ctx, ref, async ({ service, run }) => {
      const print = (value: unknown, text: string) => ctx.out(values.json ? inertJson(JSON.stringify(value, null, 2)) : text);
      if (turnId === undefined) {
        const divergence = await service.getCreditDivergence(run.id);
        print(divergence, divergenceText(divergence));
        return 0;
      }
      let credit: CounterfactualCredit;
      try {
        credit = await service.getCounterfactualCredit(turnId);
      } catch (error) {
        if (error instanceof StudioError && error.code === 'not_found') throw new UsageError(`--turn: ${error.message}`, usage);
        throw error;
      }
      if (credit.runId !== run.id) throw new UsageError(`--turn: turn ${turnId} belongs to run ${credit.runId}, not run ${run.id}; give RUN ${credit.runId} or a turn of run ${run.id}`, usage);
      print(credit, turnText(credit));
      return 0;
    });
  },
});
