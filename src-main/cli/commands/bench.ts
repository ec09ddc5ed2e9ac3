import { UsageError } from '../args';
import type { Command } from '../context';

/**
 * Benchmarks print figures and ratios against a baseline measured in the same run; they are
 * never timed tests (machines here are noisy). Each lives in src-main/bench/NAME.ts.
 */
const BENCHES: Record<string, { summary: string; load: () => Promise<{ run(argv: string[]): Promise<void> }> }> = {
  store: { summary: 'insert rate and keyset page time on a 1M-turn database', load: () => import('../../bench/store') },
  export: { summary: 'export time and peak memory per format on a 1M-turn database', load: () => import('../../bench/export') },
  model: { summary: 'policy training and sampling tokens/s against PyTorch (CPU, or the GPU with --peer-device cuda); webgpu against wasm', load: () => import('../../bench/model') },
  ui: { summary: 'trajectory page and series API times over HTTP, chart rendering in Chromium', load: () => import('../../bench/ui') },
  reliability: { summary: 'SIGKILL trials, disk full, corrupt checkpoints, locks, double resume, bad-input corpus, serve under load', load: () => import('../../bench/reliability') },
  hf: { summary: 'Qwen3-architecture model (real vocabulary): prefill/decode tokens/s vs llama.cpp and PyTorch, peak RSS when loading', load: () => import('../../bench/hf') },
  pipeline: { summary: 'sync vs pipeline training of one config and seed: wall time, tokens/s, speed-up, held-out accuracy', load: () => import('../../bench/pipeline') },
  'math-answer': { summary: 'math answer checker: time per judged case (median, p99, worst), agreement, adversarial answers, judging share of a math step; against the 4ee5cee checker', load: () => import('../../bench/math-answer') },
  hostile: { summary: 'hostile inputs against marsrl serve and the CLI (issue #36): crashes, hangs, secrets sent, data lost; then a fast-check fuzz of the HTTP API', load: () => import('../../bench/hostile') },
  serve: { summary: 'serve-model requests/s and tokens/s with 1, 8 and 32 clients against the same decoding in-process', load: () => import('../../bench/serve') },
};

const usage = () => `Usage: marsrl bench NAME [options]   (npm run bench -- NAME [options])

Benchmarks:
${Object.entries(BENCHES).map(([name, b]) => `  ${name.padEnd(10)} ${b.summary}`).join('\n')}`;

export const benchCommand: Command = {
  name: 'bench',
  summary: 'run a benchmark (store, model, export, ui)',
  get usage() {
    return usage();
  },
  async run(argv, ctx) {
    const [name, ...rest] = argv;
    if (!name || name === '--help' || name === '-h') {
      ctx.out(usage());
      return name ? 0 : 2;
    }
    const bench = BENCHES[name];
    if (!bench) throw new UsageError(`unknown benchmark ${JSON.stringify(name)}; known: ${Object.keys(BENCHES).join(', ')}`, usage());
    if (rest.includes('--help') || rest.includes('-h')) {
      const source = (await import('node:fs')).readFileSync(new URL(`../../bench/${name}.ts`, import.meta.url), 'utf8');
      // Each benchmark's file comment starts with its usage line.
      const header = /\/\*\*([\s\S]*?)\*\//.exec(source)?.[1]?.replace(/^\s*\* ?/gm, '').trim();
      ctx.out(header ?? usage());
      return 0;
    }
    await (await bench.load()).run(rest);
    return 0;
  },
};
