import fs from 'node:fs';
import path from 'node:path';
import type { ReplayDetail, ReplayRequest } from '#shared/contract';
import { runReplay, ReplayRequestError } from '../../engine/replay/replay';
import type { Store } from '../../engine/store';
import { UsageError } from '../args';
import { runArgument, defineCommand, withCliRun } from '../context';
import { printJson, table } from '../format';

const usage = `Usage: marsrl replay RUN (--episode ID | --problem ID | --prompt TEXT)
                    [--checkpoint STEP|init|RUN:STEP|PATH | --endpoint NAME]
                    [--greedy | --sampled] [--seed N] [--export OUT.jsonl] [--db PATH] [--json]

Runs a stored episode's problem, a problem of the run (its id in the store), or a question typed by
hand through the run's chain again (issue 40), and prints each replayed turn beside the stored one.

  --checkpoint   a checkpoint step of the run, RUN:STEP of another run, 'init' for the run's
                 starting policies, or a checkpoint folder (step-NNNNNN, one folder per policy);
                 left out, the model the episode was sampled with
  --endpoint     an endpoint of the run's config that plays every role
  --greedy / --sampled   the decoding (default: as the episode was sampled)
  --seed N       the seed every call's seed derives from (default: the run's evaluation seed)
  --export FILE  write the replay as JSON lines: a header line, then one line per turn

A replay is stored apart from the run (its own tables): the run's episodes and metrics never change.
It says whether the run's sampling of the episode is reproducible: a system run's calls and an RL
run's greedy evaluation chains are; an RL run's training episode is not (batched, grouped rollout).`;

/** The field a replay request refused, as this command's flag. */
const FLAGS: Record<string, string> = { episodeId: '--episode', problemId: '--problem', prompt: '--prompt', endpoint: '--endpoint', 'checkpoint.step': '--checkpoint', 'checkpoint.path': '--checkpoint', 'checkpoint.runId': '--checkpoint', runId: 'RUN' };

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) > 0xffffffff) throw new UsageError(`${flag} takes a whole number, got ${JSON.stringify(value)}`, usage);
  return Number(value);
}

function checkpointOf(value: string | undefined): ReplayRequest['checkpoint'] {
  if (value === undefined) return undefined;
  if (value === 'init') return { step: 'init' };
  if (/^\d+$/.test(value)) return { step: Number(value) };
  const other = /^(\d+):(\d+|init)$/.exec(value);
  if (other) return { runId: Number(other[1]), step: other[2] === 'init' ? 'init' : Number(other[2]) };
  return { path: path.resolve(value) };
}

function requestOf(runId: number, values: Record<string, string | boolean | undefined>): ReplayRequest {
  if (values.greedy && values.sampled) throw new UsageError('give --greedy or --sampled, not both', usage);
  const request: ReplayRequest = {
    runId,
    episodeId: positiveInt(values.episode as string | undefined, '--episode'),
    problemId: positiveInt(values.problem as string | undefined, '--problem'),
    prompt: values.prompt as string | undefined,
    checkpoint: checkpointOf(values.checkpoint as string | undefined),
    endpoint: values.endpoint as string | undefined,
    decoding: values.greedy ? 'greedy' : values.sampled ? 'sampled' : undefined,
    seed: positiveInt(values.seed as string | undefined, '--seed'),
  };
  if ([request.episodeId, request.problemId, request.prompt].filter((v) => v !== undefined).length !== 1) throw new UsageError('give exactly one of --episode, --problem or --prompt', usage);
  return request;
}

const clip = (text: string, width = 48) => {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > width ? `${flat.slice(0, width - 1)}…` : flat;
};

function describe(store: Store, detail: ReplayDetail): string {
  const r = detail.replay;
  const stored = r.episodeId === null ? [] : store.trajectories.episodeTurns(r.episodeId).filter((t) => t.supersededBy === null && t.sampleIndex === 0);
  const lines = [
    `Replay #${r.id} of run ${r.runId}${r.episodeId === null ? '' : `, episode ${r.episodeId}`}: ${r.model}, ${r.decoding}, seed ${r.seed} — ${r.status}${r.error ? `: ${r.error}` : ''}`,
    `Problem: ${clip(r.question, 100)}`,
    `Reproducible: ${r.reproducible === null ? 'n/a' : r.reproducible ? 'yes' : 'no'} — ${r.reproducibleReason ?? ''}`,
    '',
    table(
      ['#', 'agent', 'replayed', 'stored', 'same'],
      detail.turns.map((t, i) => [t.index, t.agent, clip(t.text), stored[i] ? clip(stored[i].text) : '', t.sameAsStored === null ? '' : t.sameAsStored ? 'yes' : 'NO']),
    ),
    '',
    `Final answer: ${r.finalAnswer ?? '(none)'}${r.correct === null ? '' : r.correct ? ' (right)' : ' (wrong)'}; same texts as stored: ${r.matchesStored === null ? 'n/a' : r.matchesStored ? 'yes' : 'no'}`,
    `Time: replay ${r.seconds?.toFixed(2) ?? '—'} s; the run's rollout of the episode ${storedTime(r.storedSeconds)}`,
  ];
  return lines.join('\n');
}

/** Only a system run's episode has a rollout time: an RL run writes a step's episodes together after its batched rollout, and a typed question has no stored episode. */
function storedTime(seconds: number | null | undefined): string {
  return seconds === null || seconds === undefined ? 'not timed (only a system run times each episode)' : `${seconds.toFixed(2)} s`;
}

/** The replay as JSON lines: the replay's summary, then each turn. */
export function replayJsonl(detail: ReplayDetail): string {
  return [JSON.stringify({ kind: 'replay', ...detail.replay, reference: detail.reference }), ...detail.turns.map((t) => JSON.stringify({ kind: 'replay_turn', replayId: detail.replay.id, ...t }))].join('\n') + '\n';
}

export const replayCommand = defineCommand({
  name: 'replay',
  summary: "run a stored episode's problem, a problem or a prompt through the chain again with any checkpoint or an endpoint",
  usage,
  options: {
    episode: { type: 'string' },
    problem: { type: 'string' },
    prompt: { type: 'string' },
    checkpoint: { type: 'string' },
    endpoint: { type: 'string' },
    seed: { type: 'string' },
    greedy: { type: 'boolean', default: false },
    sampled: { type: 'boolean', default: false },
    export: { type: 'string' },
  },
  maxPositionals: 1,
  async run({ values, positionals }, ctx) {
    const ref = runArgument(positionals, 'replay', usage);
    return withCliRun(values.db, ctx, ref, async ({ store, run }) => {
      const request = requestOf(run.id, values);
      let replayId: number;
      try {
        replayId = await runReplay(store, request, { env: ctx.env });
      } catch (error) {
        if (error instanceof ReplayRequestError) {
          ctx.err(`marsrl replay: ${FLAGS[error.field] ?? error.field}: ${error.message}`);
          return 1;
        }
        throw error;
      }
      const detail = store.replays.get(replayId)!;
      if (typeof values.export === 'string') fs.writeFileSync(path.resolve(values.export), replayJsonl(detail));
      if (values.json) printJson(ctx.out, detail);
      else ctx.out(describe(store, detail));
      return detail.replay.status === 'done' ? 0 : 1;
    });
  },
});
