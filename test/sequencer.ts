/**
 * The order vitest starts test files in. With timings of an earlier run in its cache, vitest
 * starts the longest first and that order is kept. Without them (CI: a fresh clone each time) it
 * starts the largest files first, and a short file can take two minutes (the reliability bench,
 * 80 lines, starts real processes and kills them): started last, it runs alone while the other
 * worker idles. So files known to take a long time, listed here longest first from a CI log,
 * start first when vitest has no timings at all; the rest follow in vitest's own order.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';
import path from 'node:path';

/** Files that took 25 s or more in a full run on 2 cores (vitest's own per-file diagnostic, 2026-12-06), longest first; a name no longer there is ignored. */
export const SLOW_FILES = [
  'test/bench/reliability.test.ts',
  'test/hf/gguf.test.ts',
  'test/engines/engine-cli.test.ts',
  'test/model/webgpu-run.test.ts',
  'test/runner/kill-resume.test.ts',
  'test/e2e/engine-run.e2e.test.ts',
  'test/hf/llamacpp.test.ts',
  'test/e2e/explains.e2e.test.ts',
  'test/hf/model.test.ts',
  'test/hf/run-export.test.ts',
  'test/training/hf-run.test.ts',
  'test/e2e/truth.e2e.test.ts',
  'test/hf/model-cli.test.ts',
  'test/e2e/new-run-lora.e2e.test.ts',
  'test/runner/stop-anywhere.test.ts',
  'test/served/serve-model-cli.test.ts',
  'test/cli/serve-build.test.ts',
  'test/e2e/studio.e2e.test.ts',
  'test/bench/hostile.test.ts',
  'test/runner/stale-runs.test.ts',
  'test/training/lora-run.test.ts',
  'test/hf/torch.test.ts',
  'test/pipeline/shutdown.test.ts',
];

export class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const key = (f: TestSpecification) => path.relative(this.ctx.config.root, f.moduleId).split(path.sep).join('/');
    const timed = sorted.some((f) => this.ctx.cache.getFileTestResults(`${f.project.name}:${key(f)}`));
    if (timed) return sorted;
    const rank = (f: TestSpecification) => {
      const i = SLOW_FILES.indexOf(key(f));
      return i < 0 ? SLOW_FILES.length : i;
    };
    // Array.prototype.sort is stable: the unlisted files keep vitest's order.
    return sorted.sort((a, b) => rank(a) - rank(b));
  }
}
