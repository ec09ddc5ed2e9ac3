/**
 * `npm run bench -- NAME [options]`: the benchmarks. They print figures and ratios against a
 * baseline measured in the same run, never timed tests (machines here are noisy). Each lives in
 * bench/NAME.ts and drives the Studio from outside, as a user does: through the `marsrl` CLI, the
 * engine and the StudioApi. Nothing in src-main imports them, so neither the CLI nor the desktop
 * app carries a benchmark (issue 37); bench/run.js starts this file from source through tsx.
 */
import fs from 'node:fs';

interface Bench {
  summary: string;
  load: () => Promise<{ run(argv: string[]): Promise<void> }>;
}

const BENCHES: Record<string, Bench> = {
  store: { summary: 'insert rate and keyset page time on a 1M-turn database', load: () => import('./store') },
  export: { summary: 'export time and peak memory per format on a 1M-turn database', load: () => import('./export') },
  model: { summary: 'policy training and sampling tokens/s against PyTorch (CPU, or the GPU with --peer-device cuda); webgpu against wasm', load: () => import('./model') },
  ui: { summary: 'trajectory page and series API times over HTTP, chart rendering in Chromium', load: () => import('./ui') },
  reliability: { summary: 'SIGKILL trials, disk full, corrupt checkpoints, locks, double resume, bad-input corpus, serve under load', load: () => import('./reliability') },
  hf: { summary: 'Qwen3-architecture model (real vocabulary): prefill/decode tokens/s vs llama.cpp and PyTorch, peak RSS when loading', load: () => import('./hf') },
  pipeline: { summary: 'sync vs pipeline training of one config and seed: wall time, tokens/s, speed-up, held-out accuracy', load: () => import('./pipeline') },
  'math-answer': { summary: 'math answer checker: time per judged case (median, p99, worst), agreement, adversarial answers, judging share of a math step; against the 4ee5cee checker', load: () => import('./math-answer') },
  hostile: { summary: 'hostile inputs against marsrl serve and the CLI (issue #36): crashes, hangs, secrets sent, data lost; then a fast-check fuzz of the HTTP API', load: () => import('./hostile') },
  'engine-follow': { summary: 'veRL/DrMAS ingestion: 100k dumped generations followed into records, turns/s against a plain JSON.parse baseline, heap per poll', load: () => import('./engine-follow') },
  import: { summary: 'imports of runs made elsewhere: 100k MarsRL generations and 1M MLflow metric points, records/s, peak RSS and heap, against the reader alone', load: () => import('./import') },
  serve: { summary: 'serve-model requests/s and tokens/s with 1, 8 and 32 clients against the same decoding in-process', load: () => import('./serve') },
  problems: { summary: "one problem across steps and runs (issue 40): problem list and one problem's episodes on 2 runs × 5 000 problems (400k turns)", load: () => import('./problems') },
  cli: { summary: 'start-up of marsrl commands (runs, show, presets, config validate): wall and CPU time, peak RSS, against marsrl --help', load: () => import('./cli') },
  replay: { summary: "replay time of a 21-turn system-run episode against the run's own rollout of it (issue 40), texts compared", load: () => import('./replay') },
};

export const BENCH_NAMES: readonly string[] = Object.keys(BENCHES);

const usage = () => `Usage: npm run bench -- NAME [options]   (npm run bench -- NAME --help: a benchmark's options)

Benchmarks:
${Object.entries(BENCHES).map(([name, b]) => `  ${name.padEnd(10)} ${b.summary}`).join('\n')}`;

export interface BenchContext {
  out: (text: string) => void;
  err: (text: string) => void;
}

/** Runs the benchmark `argv` names; the exit status (2: usage). */
export async function main(argv: string[], ctx: BenchContext): Promise<number> {
  const [name, ...rest] = argv;
  if (!name || name === '--help' || name === '-h') {
    ctx.out(usage());
    return name ? 0 : 2;
  }
  const bench = Object.hasOwn(BENCHES, name) ? BENCHES[name] : undefined;
  if (!bench) {
    ctx.err(`npm run bench: unknown benchmark ${JSON.stringify(name)}; known: ${BENCH_NAMES.join(', ')}`);
    return 2;
  }
  if (rest.includes('--help') || rest.includes('-h')) {
    const source = fs.readFileSync(new URL(`./${name}.ts`, import.meta.url), 'utf8');
    // Each benchmark's file comment starts with its usage line.
    const header = /\/\*\*([\s\S]*?)\*\//.exec(source)?.[1]?.replace(/^\s*\* ?/gm, '').trim();
    ctx.out(header ?? usage());
    return 0;
  }
  try {
    await (await bench.load()).run(rest);
    return 0;
  } catch (error) {
    // A bad flag or a failed measurement: its message, as `marsrl` reports a failed command.
    ctx.err(`npm run bench -- ${name}: ${error instanceof Error ? error.message : String(error)}`);
    if (process.env.MARSRL_DEBUG && error instanceof Error && error.stack) ctx.err(error.stack);
    return 1;
  }
}
