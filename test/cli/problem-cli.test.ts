/**
 * `marsrl problem` (issue 40) in process, on two seeded runs of the same problems: the matched list
 * with each run's last outcome, the differs and split filters, one problem's trees step by step
 * (rewards and advantages as stored), JSON equal to the API's, and bad flags named with the fix.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { ProblemEpisodes, ProblemOutcomePage } from '#shared/contract';
import { marsrlInProcess } from '../helpers/cli';
import { storeInTemp } from '../helpers/runs-db';
import { seedProblems, type SeededProblems } from '../helpers/seed';

const db = storeInTemp('problem-cli.db');
let seeded: SeededProblems;
let runs: string;

beforeAll(() => {
  seeded = seedProblems(db.store, { problems: 8, heldOut: 2, steps: [0, 10, 20] });
  runs = seeded.runs.map((r) => r.id).join(',');
});

const cli = (args: string[]) => marsrlInProcess(db.databasePath, ['problem', ...args]);

describe('marsrl problem', () => {
  it('lists the matched problems held-out first, one outcome column per run, and the ones that differ', async () => {
    const { code, out } = await cli([runs]);
    expect(code).toBe(0);
    const rows = out.split('\n').filter((l) => /^(held-out|train) /.test(l));
    expect(rows).toHaveLength(seeded.problems.length);
    expect(rows.slice(0, 2).every((l) => l.startsWith('held-out'))).toBe(true);
    const json = JSON.parse((await cli([runs, '--json'])).out) as ProblemOutcomePage;
    const differing = json.items.filter((r) => r.differs);
    expect(out).toContain(`${seeded.problems.length} matched, 2 held out, ${differing.length} with outcomes that differ`);
    // The problem only the first run has: a dash in the second run's column.
    const lonely = seeded.problems.find((p) => p.keys[1] === null)!;
    expect(rows.find((l) => l.includes(lonely.question))).toMatch(/ — *$/);
    const only = await cli([`${seeded.runs[0].name},${seeded.runs[1].id}`, '--differs', '--json']);
    expect((JSON.parse(only.out) as ProblemOutcomePage).items.map((r) => r.key)).toEqual(differing.map((r) => r.key));
    const train = JSON.parse((await cli([runs, '--split', 'heldout', '--json'])).out) as ProblemOutcomePage;
    expect(train.items.map((r) => r.split)).toEqual(['test', 'test']);
  });

  it("prints one problem's trees step by step, run beside run, with the stored rewards and advantages", async () => {
    const problem = seeded.problems[4];
    const episodes = seeded.episodes.filter((e) => e.matchKey === problem.matchKey);
    const { code, out } = await cli([runs, '--problem', String(episodes[0].problemId), '--steps', '0,20']);
    expect(code).toBe(0);
    expect(out).toContain(`Steps shown: 0, 20 of 0, 10, 20`);
    expect(out.match(/^step \d+$/gm)).toEqual(['step 0', 'step 20']);
    for (const e of episodes.filter((x) => x.step !== 10)) {
      const block = out.slice(out.indexOf(`episode ${e.episodeId}:`)).split(/\n {4}episode |\n {2}#|\nstep /)[0];
      const lines = block.split('\n').slice(1).filter((l) => l.trim() !== '');
      expect(lines).toHaveLength(e.turns.length);
      for (const t of e.turns) {
        const line = lines.find((l) => l.trimStart().startsWith(`${t.agent}#`) && l.includes(t.text.slice(0, 20)))!;
        expect(line, t.text).toContain(`R ${t.reward}  A ${Number.isInteger(t.advantage) ? t.advantage : t.advantage.toFixed(3)}`);
      }
    }
    const json = JSON.parse((await cli([runs, '--turn', String(episodes[1].turns[2].id), '--json'])).out) as ProblemEpisodes;
    expect(json.problem.question).toBe(problem.question);
    expect(json.episodes.map((e) => e.episode.id).sort()).toEqual(episodes.map((e) => e.episodeId).sort());
  });

  it('refuses bad flags and missing things, naming them and the fix', async () => {
    const cases: [string[], number, RegExp][] = [
      [[], 2, /needs at least one RUN/],
      [[runs, '--split', 'dev'], 2, /--split must be heldout .* or train \(got "dev"\)/],
      [[runs, '--steps', '0,x'], 2, /--steps must be steps separated by commas, such as 0,10,20/],
      [[runs, '--steps', '0,10'], 2, /--steps goes with --problem ID or --turn ID/],
      [[runs, '--problem', '1', '--turn', '2'], 2, /give --problem or --turn, not both/],
      [[runs, '--problem', '0'], 2, /--problem must be an integer from 1/],
      [[runs, '--limit', '5000'], 2, /--limit must be an integer from 1 to 1000/],
      [['nosuchrun'], 1, /No run "nosuchrun" .* List runs with: marsrl runs/],
      [[runs, '--problem', '99999'], 1, /problem 99999 does not exist/],
      [[String(seeded.runs[0].id), '--problem', String(seeded.episodes.find((e) => e.runId === seeded.runs[1].id)!.problemId)], 1, /not among runIds .* add run/],
    ];
    for (const [args, code, message] of cases) {
      const result = await cli(args);
      expect(result.code, args.join(' ')).toBe(code);
      expect(result.err, args.join(' ')).toMatch(message);
    }
  });
});
