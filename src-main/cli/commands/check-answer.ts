import fs from 'node:fs';
import { judgeMathAnswer, MATH_CHECKER_FULL_VERSION, stopCheckerThread, type MathJudgement } from '../../engine/tasks/math-answer';
import { UsageError } from '../args';
import { defineCommand, type CommandContext } from '../context';
import { printJson } from '../format';
import { inertJson } from '../../engine/util/inert';

const usage = `Usage: marsrl check-answer REFERENCE RESPONSE [--explain] [--json]
       marsrl check-answer --jsonl FILE [--out PATH]

Judges a response against a reference answer with the math checker the Studio's runs use (its
rules: README, "The math answer checker"). RESPONSE is a whole response: its final answer is
extracted (the last box, "####", "Answer: …", the last math, or a bare answer), then compared.
--explain shows how both were read and why the verdict is what it is.

--jsonl FILE judges every line of a JSONL file of {"reference": …, "response": …} objects (a
dataset's answers, another grader's outputs; FILE - reads standard input) and writes each line back
with "correct", "extracted" (the answer read) and "reason" added (to standard output, or PATH with
--out). A line that cannot be judged is written back with "error" and counted; the exit code is
then 1.`;

function explain(reference: string, response: string, j: MathJudgement, ms: number): string {
  return [
    `checker     ${MATH_CHECKER_FULL_VERSION}`,
    `reference   ${JSON.stringify(reference)}`,
    `  answer    ${JSON.stringify(j.reference)}`,
    `  read as   ${j.readReference ?? '(not read)'}`,
    `response    ${JSON.stringify(response.length > 200 ? `${response.slice(0, 100)} … ${response.slice(-100)}` : response)}`,
    `  answer    ${JSON.stringify(j.answer)}${j.source ? ` (found by the ${j.source} rule)` : ''}`,
    `  read as   ${j.readAnswer ?? '(not read)'}`,
    `verdict     ${j.correct ? 'correct' : 'wrong'}: ${j.reason}`,
    `time        ${ms.toFixed(1)} ms${j.usedEngine ? ' (compute-engine, in the checker thread)' : ' (no computer algebra needed)'}${j.timedOut ? ' — over the time budget' : ''}`,
  ].join('\n');
}

type Line = { ok: true; value: Record<string, unknown> } | { ok: false; error: string };

/** A JSONL line as an object with string `reference` and `response`, or the error that names the field. */
function parseLine(text: string, number: number): Line {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, error: `line ${number}: not valid JSON (${(error as Error).message})` };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, error: `line ${number}: not a JSON object` };
  const record = value as Record<string, unknown>;
  for (const field of ['reference', 'response']) {
    // A dataset's numeric answer (`"answer": 42`) is its text.
    if (typeof record[field] === 'number' && Number.isFinite(record[field])) continue;
    if (typeof record[field] !== 'string') return { ok: false, error: `line ${number}: "${field}" must be a string or a number (got ${record[field] === undefined ? 'nothing' : typeof record[field]}); each line is {"reference": "…", "response": "…"}` };
  }
  return { ok: true, value: record };
}

function judgeFile(file: string, outPath: string | undefined, ctx: CommandContext): number {
  const text = file === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(file, 'utf8');
  const out: string[] = [];
  let errors = 0;
  let correct = 0;
  let judged = 0;
  text.split(/\r?\n/).forEach((raw, i) => {
    if (raw.trim() === '') return;
    const line = parseLine(raw, i + 1);
    if (!line.ok) {
      errors++;
      ctx.err(`marsrl check-answer: ${line.error}`);
      out.push(JSON.stringify({ line: i + 1, error: line.error }));
      return;
    }
    const j = judgeMathAnswer(String(line.value.reference), String(line.value.response));
    judged++;
    if (j.correct) correct++;
    out.push(JSON.stringify({ ...line.value, correct: j.correct, extracted: j.answer, reason: j.reason }));
  });
  if (outPath) fs.writeFileSync(outPath, out.length > 0 ? `${out.join('\n')}\n` : '');
  // On a terminal the lines are made inert like every other JSON the CLI prints (issue #36):
  // JSON.stringify leaves DEL, C1 and the bidi controls of a response as they are.
  else if (out.length > 0) ctx.out(inertJson(out.join('\n')));
  ctx.err(`${judged} lines judged, ${correct} correct${errors ? `, ${errors} not judged (see above)` : ''}${outPath ? `; written to ${outPath}` : ''}`);
  return errors > 0 ? 1 : 0;
}

export const checkAnswerCommand = defineCommand({
  name: 'check-answer',
  summary: 'judge a response against a reference answer with the math checker (or a JSONL file of them)',
  usage,
  options: { explain: { type: 'boolean', default: false }, jsonl: { type: 'string' }, out: { type: 'string' } },
  maxPositionals: 2,
  async run({ values, positionals }, ctx) {
    try {
      if (values.jsonl !== undefined) {
        if (positionals.length > 0) throw new UsageError('--jsonl FILE takes its pairs from the file; give no REFERENCE or RESPONSE with it', usage);
        if (values.jsonl !== '-' && !fs.existsSync(values.jsonl)) throw new UsageError(`--jsonl: no file at ${values.jsonl}`, usage);
        return judgeFile(values.jsonl, values.out, ctx);
      }
      if (values.out !== undefined) throw new UsageError('--out goes with --jsonl FILE', usage);
      if (positionals.length !== 2) throw new UsageError('check-answer needs a REFERENCE and a RESPONSE (quote each), or --jsonl FILE', usage);
      const [reference, response] = positionals;
      const started = performance.now();
      const j = judgeMathAnswer(reference, response);
      const ms = performance.now() - started;
      if (values.json) printJson(ctx.out, { ...j, checkerVersion: MATH_CHECKER_FULL_VERSION, ms });
      else ctx.out(values.explain ? explain(reference, response, j, ms) : `${j.correct ? 'correct' : 'wrong'}: ${j.reason}`);
      return 0;
    } finally {
      stopCheckerThread();
    }
  },
});
