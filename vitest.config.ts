import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Native addons (better-sqlite3, tfjs-wasm) are safest in separate processes.
    pool: 'forks',
    // Two files at a time even on a 2-core machine (vitest's default there is one): most test
    // files spend much of their time waiting on child processes, Chromium or sockets, and the
    // suite's wall time is what keeps CI under its 20 minutes.
    maxWorkers: 2,
    testTimeout: 120_000,
    hookTimeout: 120_000,
    reporters: ['default'],
  },
});
