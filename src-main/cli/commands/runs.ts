import { configToYaml } from '../../engine/config/load';
import type { RunConfig } from '../../engine/config/schema';
import { RUN_STATUSES, type RunStatus } from '../../engine/store/types';
import { toRunDetail } from '../../api/views';
import type { RunDetail } from '#shared/contract';
import { choiceFlag, intFlag } from '../args';
import { openCliStudio, runArgument, defineCommand, withCliRun } from '../context';
import { inertLine } from '../../engine/util/inert';
import { formatAge, formatDuration } from '#shared/format';
import { number, printJson, table } from '../format';

const runsUsage = `Usage: marsrl runs [--status STATUS] [--search TEXT] [--limit N] [--db PATH] [--json]

Lists runs, newest first. STATUS is one of ${RUN_STATUSES.join(', ')}.`;

export const runsCommand = defineCommand({
  name: 'runs',
  summary: 'list runs in the store',
  usage: runsUsage,
  options: { status: { type: 'string' }, search: { type: 'string' }, limit: { type: 'string' } },
  maxPositionals: 0,
  async run({ values }, ctx) {
    choiceFlag('status', values.status, RUN_STATUSES, runsUsage);
    const limit = intFlag('limit', values.limit, 1, 500, runsUsage) ?? 50;
    const { store, service, databasePath } = openCliStudio(values.db, ctx.env);
    try {
      const page = await service.listRuns({ limit, status: values.status as RunStatus | undefined, search: values.search });
      if (values.json) {
        printJson(ctx.out, page);
        return 0;
      }
      if (page.items.length === 0) {
        ctx.out(`No runs in ${databasePath}.`);
        return 0;
      }
      ctx.out(
        table(
          ['id', 'name', 'status', 'preset', 'task', 'reward', 'norm', 'seed', 'step', 'sys acc', 'created'],
          page.items.map((r) => [
            r.id,
            r.name,
            r.status,
            r.preset ?? '',
            r.task,
            r.rewardScheme,
            r.advantageMode,
            r.seed,
            r.lastStep ?? '',
            number(r.keyMetrics['eval/system/accuracy']),
            formatAge(r.createdAt),
          ]),
        ),
      );
      if (page.nextCursor !== null) ctx.out(`… more runs: use --limit or --search`);
      return 0;
    } finally {
      store.close();
    }
  },
});

const showUsage = `Usage: marsrl show RUN [--db PATH] [--json]

Shows one run (by id or name): status, timing, backend, counts, latest metrics, every held-out
evaluation (one column per evaluation step: the warm start, then as RL goes on), recent events and
the resolved configuration.`;

/** Which answer checker judged the run (issue #34), and its newest re-judgement. */
function checkerLines(checker: RunDetail['checker']): string[] {
  if (!checker) return [];
  const versions = [...new Set(checker.versions.map((v) => v ?? 'unrecorded (made before checker versions were stored)'))].join('; ');
  const lines = [`  checker    ${versions}`];
  if (checker.versions.some((v) => v !== checker.today)) lines.push(`             today's is ${checker.today}: \`marsrl rejudge RUN --dry-run\` lists the verdicts that would change`);
  const r = checker.latestRejudge;
  if (r) lines.push(`  rejudged   ${new Date(r.createdAt).toISOString()} with ${r.checkerVersion}: ${r.changed} of ${r.turnsChecked} verdicts changed (stored verdicts unchanged)`);
  return lines;
}

/** Where an imported run came from (issue 39): it is read-only, and grows by importing its source again. */
function importLines(origin: RunDetail['imported']): string[] {
  if (!origin) return [];
  return [
    `  imported   from ${origin.format} ${inertLine(origin.path)}${origin.sourceKey === '.' ? '' : ` (source run ${inertLine(origin.sourceKey)})`}; read-only: marsrl import ${inertLine(origin.path)} adds what is new`,
    `  digest     sha256 ${origin.digest || '(not computed: the import was cancelled)'}`,
    `  imported   at ${new Date(origin.importedAt).toISOString()}${origin.updatedAt !== origin.importedAt ? `, last added to ${new Date(origin.updatedAt).toISOString()}` : ''}`,
  ];
}

export const showCommand = defineCommand({
  name: 'show',
  summary: 'show one run in detail',
  usage: showUsage,
  options: {},
  maxPositionals: 1,
  async run({ values, positionals }, ctx) {
    const ref = runArgument(positionals, 'show', showUsage);
    return withCliRun(values.db, ctx, ref, async ({ store, run }) => {
      const detail = toRunDetail(store, run);
      const latest = store.metrics.latest(run.id, store.metrics.keys(run.id));
      const events = store.events.events(run.id, 0, 1000).items.slice(-10);
      // Held-out evaluations by step: what a run did to every agent, from its warm start on.
      const evaluations: Record<string, Record<number, number>> = {};
      for (const key of store.metrics.keys(run.id).filter((k) => k.startsWith('eval/'))) {
        evaluations[key] = Object.fromEntries(store.metrics.series(run.id, key).items.map((p) => [p.step, p.value]));
      }
      if (values.json) {
        printJson(ctx.out, { ...detail, latestMetrics: latest, evaluations, recentEvents: events });
        return 0;
      }
      const lines = [
        `Run ${detail.id}: ${inertLine(detail.name)}`,
        `  status     ${detail.status}${detail.statusReason ? ` (${detail.statusReason})` : ''}`,
        `  preset     ${detail.preset ?? '(none)'}    seed ${detail.seed}    code ${detail.codeVersion}`,
        `  backend    ${detail.backend ?? (detail.imported ? '(imported)' : '(not started)')}`,
        ...importLines(detail.imported),
        ...checkerLines(detail.checker),
        `  created    ${new Date(detail.createdAt).toISOString()} (${formatAge(detail.createdAt)})`,
        `  ran for    ${detail.startedAt ? formatDuration(((detail.endedAt ?? Date.now()) - detail.startedAt) / 1000) : '(not started)'}`,
        `  rows       ${Object.entries(detail.counts).map(([k, v]) => `${k} ${v}`).join(', ')}`,
      ];
      // What can really be done with it (training/advice.ts): never a resume without a checkpoint.
      for (const action of detail.actions) lines.push(`  next       ${action.text}: ${action.command}`);
      if (detail.stopRequest) lines.push(`  stopping   ${detail.stopRequest.reason}, requested ${formatAge(detail.stopRequest.at)}`);
      const resumed = detail.lastResume;
      if (resumed) {
        lines.push(`  resumed    attempt ${resumed.attempt} from the checkpoint of step ${resumed.checkpointStep} (${resumed.checkpointDir}); ${resumed.superseded.turns} turns of the redone steps kept as superseded`);
        for (const skip of resumed.skipped) lines.push(`             skipped the newer checkpoint of step ${skip.step ?? '?'}: ${skip.error}`);
      }
      for (const flag of detail.collapse) lines.push(`  collapsed  ${flag.message}`);
      const metricKeys = Object.keys(latest);
      if (metricKeys.length) {
        lines.push('', 'Latest metrics:', table(['metric', 'value'], metricKeys.map((k) => [k, number(latest[k], 4)])));
      }
      const evalKeys = Object.keys(evaluations);
      if (evalKeys.length) {
        const steps = [...new Set(evalKeys.flatMap((k) => Object.keys(evaluations[k]).map(Number)))].sort((a, b) => a - b);
        lines.push(
          '',
          'Held-out evaluations (by step):',
          table(['metric', ...steps.map((step) => `@${step}`)], evalKeys.map((k) => [k.slice('eval/'.length), ...steps.map((step) => (step in evaluations[k] ? number(evaluations[k][step], 3) : '—'))])),
        );
      }
      if (events.length) {
        lines.push('', 'Recent events:', ...events.map((e) => `  [${e.level}] step ${e.step ?? '-'} ${inertLine(e.kind)}: ${inertLine(e.message)}`));
      }
      // An imported run keeps its source's own configuration, not a Studio config (importer.ts).
      const config = detail.imported ? JSON.stringify(detail.config, null, 2) : configToYaml(detail.config as unknown as RunConfig).trimEnd();
      lines.push('', detail.imported ? 'Configuration (as the source wrote it):' : 'Configuration:', config.replace(/^/gm, '  '));
      ctx.out(lines.join('\n'));
      return 0;
    });
  },
});
