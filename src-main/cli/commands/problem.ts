/**
 * `marsrl problem` (issue 40): one problem across the steps of a run and across runs. Without
 * --problem or --turn it lists the runs' problems matched by id (else text), held-out first, with
 * each run's last outcome; with one of them it prints that problem's episode trees step by step,
 * run beside run, with each turn's verdict, reward and advantage. The same StudioApi calls the
 * Compare view and `marsrl serve` make.
 */
import type { ProblemEpisode, ProblemEpisodes, ProblemOutcomePage, ProblemRunOutcome } from '#shared/contract';
import { StudioError } from '#shared/errors';
import { excerpt, turnTreeOrder } from '#shared/turn-tree';
import { intFlag, runRef, UsageError } from '../args';
import { defineCommand, openCliStudio, type CommandContext } from '../context';
import { number, table } from '../format';

const problemUsage = `Usage: marsrl problem RUN[,RUN…] [--differs] [--split heldout|train] [--search TEXT] [--limit N] [--db PATH] [--json]
       marsrl problem RUN[,RUN…] --problem ID | --turn ID [--steps 0,10,20] [--db PATH] [--json]

One problem, many episodes (issue 40). RUNs are ids or names, comma-separated or one per
argument. Problems are matched across the runs by their stable id (split, task, key) and, where
a run has another id, by the question's text; the held-out set comes first.

Without --problem/--turn: the matched problems with each run's outcome at the last step it saw
the problem (✓ right, ✗ wrong, — not in that run) and its episodes solved; --differs keeps the
problems whose outcomes differ between the runs, --split heldout|train one split.

--problem ID (a problem id of the list, in any of the runs) or --turn ID (any turn of the runs):
that problem's episodes, step by step and run by run, as trees: each turn's agent, output,
verdict or answer (✓/✗), reward R and advantage A. --steps picks the steps (default: up to 8
spread over every step with an episode).`;

const mark = (correct: boolean | null) => (correct === null ? '?' : correct ? '✓' : '✗');

function parseRuns(positionals: string[]): string[] {
  const refs = positionals.flatMap((p) => p.split(',')).map((r) => r.trim()).filter(Boolean);
  if (refs.length === 0) throw new UsageError('problem needs at least one RUN (id or name)', problemUsage);
  for (const ref of refs) runRef(ref, 'each RUN', problemUsage);
  return refs;
}

function parseSteps(raw: string | undefined): number[] | undefined {
  if (raw === undefined) return undefined;
  const parts = raw.split(',').map((s) => s.trim());
  if (parts.some((s) => !/^\d+$/.test(s))) throw new UsageError(`--steps must be steps separated by commas, such as 0,10,20 (got ${JSON.stringify(raw)})`, problemUsage);
  return parts.map(Number);
}

function parseSplit(raw: string | undefined): 'train' | 'test' | undefined {
  if (raw === undefined) return undefined;
  if (raw === 'heldout' || raw === 'held-out' || raw === 'test') return 'test';
  if (raw === 'train') return 'train';
  throw new UsageError(`--split must be heldout (the held-out set, also: test) or train (got ${JSON.stringify(raw)})`, problemUsage);
}

function outcomeCell(o: ProblemRunOutcome | null): string {
  if (!o) return '—';
  return `${mark(o.lastCorrect)} @${o.lastStep ?? '—'} (${o.solved}/${o.episodes})`;
}

function printList(page: ProblemOutcomePage, ctx: CommandContext): void {
  const runs = page.runs.map((r) => `#${r.runId} ${r.name} (${r.label})`).join(', ');
  const lines = [`Problems of ${runs}: ${page.counts.problems} matched, ${page.counts.heldOut} held out, ${page.counts.differing} with outcomes that differ.`];
  const rows = page.items.map((r) => [
    r.split === 'test' ? 'held-out' : 'train',
    r.runs.find((o) => o)?.problemId ?? '',
    excerpt(r.problemKey, 16),
    excerpt(r.question, 40),
    ...r.runs.map(outcomeCell),
    r.differs ? 'differs' : '',
  ]);
  lines.push(table(['split', 'id', 'key', 'question', ...page.runs.map((r) => `#${r.runId} last`), ''], rows));
  if (page.nextCursor !== null) lines.push(`… ${page.total - page.nextCursor} more; narrow with --differs, --split or --search, or raise --limit.`);
  lines.push('Open one: marsrl problem RUNS --problem ID');
  ctx.out(lines.join('\n'));
}

function episodeLines(e: ProblemEpisode): string[] {
  const head = `episode ${e.episode.id}: final ${e.episode.finalAnswer ?? '—'} ${mark(e.episode.correct)}`;
  const turns = turnTreeOrder(e.turns).map(({ turn, depth }) => {
    const credit = `R ${turn.reward === null ? '—' : number(turn.reward, 2)}  A ${turn.advantage === null ? '—' : number(turn.advantage, 3)}`;
    return `${'  '.repeat(depth + 2)}${turn.agent}#${turn.sampleIndex}  ${excerpt(turn.text, 40)}  → ${turn.parsed ?? 'unparsed'} ${mark(turn.correct)}  ${credit}`;
  });
  return [`    ${head}`, ...turns];
}

function printEpisodes(view: ProblemEpisodes, ctx: CommandContext): void {
  const p = view.problem;
  const lines = [
    `Problem ${p.problemKey} (${p.split === 'test' ? 'held-out' : 'train'}, ${p.family}; matched by ${p.matchedBy}): ${excerpt(p.question, 120)} → ${p.answer}`,
    `Steps shown: ${view.steps.join(', ') || '—'} of ${view.allSteps.join(', ') || 'none'}`,
  ];
  for (const step of view.steps) {
    lines.push('', `step ${step}`);
    for (const run of view.runs) {
      const here = view.episodes.filter((e) => e.runId === run.runId && e.step === step);
      const where = run.problemId === null ? 'no such problem' : here.length === 0 ? 'no episode at this step' : '';
      lines.push(`  #${run.runId} ${run.name} (${run.label})${where ? `: ${where}` : ''}`);
      for (const e of here) lines.push(...episodeLines(e));
    }
  }
  ctx.out(lines.join('\n'));
}

export const problemCommand = defineCommand({
  name: 'problem',
  summary: 'one problem across the steps of a run and across runs: outcomes, episode trees, rewards, advantages',
  usage: problemUsage,
  options: { problem: { type: 'string' }, turn: { type: 'string' }, differs: { type: 'boolean' }, split: { type: 'string' }, steps: { type: 'string' }, search: { type: 'string' }, limit: { type: 'string' } },
  async run({ values, positionals }, ctx) {
    const refs = parseRuns(positionals);
    const problemId = intFlag('problem', values.problem, 1, Number.MAX_SAFE_INTEGER, problemUsage);
    const turnId = intFlag('turn', values.turn, 1, Number.MAX_SAFE_INTEGER, problemUsage);
    if (problemId !== undefined && turnId !== undefined) throw new UsageError('give --problem or --turn, not both', problemUsage);
    const steps = parseSteps(values.steps);
    if (steps && problemId === undefined && turnId === undefined) throw new UsageError('--steps goes with --problem ID or --turn ID', problemUsage);
    const split = parseSplit(values.split);
    const limit = intFlag('limit', values.limit, 1, 1000, problemUsage) ?? 50;

    const { store, service, databasePath } = openCliStudio(values.db, ctx.env);
    try {
      const runIds: number[] = [];
      for (const ref of refs) {
        const run = store.runs.find(ref);
        if (!run) {
          ctx.err(`No run ${JSON.stringify(ref)} in ${databasePath}. List runs with: marsrl runs`);
          return 1;
        }
        if (!runIds.includes(run.id)) runIds.push(run.id);
      }
      if (problemId === undefined && turnId === undefined) {
        const page = await service.listProblemOutcomes({ runIds, differs: values.differs, split, search: values.search, limit });
        if (values.json) ctx.out(JSON.stringify(page, null, 2));
        else printList(page, ctx);
        return 0;
      }
      const view = await service.getProblemEpisodes({ runIds, problemId, turnId, steps });
      if (values.json) ctx.out(JSON.stringify(view, null, 2));
      else printEpisodes(view, ctx);
      return 0;
    } catch (error) {
      if (error instanceof StudioError) {
        ctx.err(error.message);
        return 1;
      }
      throw error;
    } finally {
      store.close();
    }
  },
});
