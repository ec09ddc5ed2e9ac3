import { defineConfig } from 'vitest/config';
import { SlowFirstSequencer } from './test/sequencer';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Native addons (better-sqlite3, tfjs-wasm) are safest in separate processes.
    pool: 'forks',
    // Three files at a time even on a 2-core machine (vitest's default there is one): most test
    // files spend much of their time waiting on child processes, Chromium or sockets, and the
    // suite's wall time is what keeps CI under its 20 minutes (1,004 s against 1,093 s with two,
    // same tree). Under that load one step's time says little about the next's, so the reliability
    // bench times its kills from the step it kills (bench/reliability.ts killTrial).
    maxWorkers: 3,
    // The long files first when there are no cached timings (CI), so neither worker is left
    // running one of them alone at the end (test/sequencer.ts).
    sequence: { sequencer: SlowFirstSequencer },
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
