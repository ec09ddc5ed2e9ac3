/**
 * `npm run bench -- replay` at a small size (issue 40): it makes 21-turn loop episodes, replays
 * them with the run's endpoints and seed, and reports both times from the run's own rows; the
 * replayed texts are the stored ones. Figures, not a timed assertion: only their shape is checked.
 */
import { describe, expect, it, vi } from 'vitest';
import { run } from '../../bench/replay';

describe('npm run bench -- replay', () => {
  it('replays 21-turn episodes and reports replay and rollout seconds with their ratio', async () => {
    const written: string[] = [];
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (written.push(String(chunk)), true));
    try {
      await run(['--problems', '2', '--k', '1', '--iterations', '10', '--words', '6', '--token-ms', '1', '--replays', '2', '--json']);
    } finally {
      spy.mockRestore();
    }
    const summary = JSON.parse(written.join('')) as { episodes: { turns: number; replaySeconds: number; storedSeconds: number; ratio: number; sameTexts: boolean }[]; medianRatio: number };
    expect(summary.episodes).toHaveLength(2);
    for (const e of summary.episodes) {
      expect(e.turns).toBe(21);
      expect(e.sameTexts).toBe(true);
      expect(e.storedSeconds).toBeGreaterThan(0);
      expect(e.ratio).toBeCloseTo(e.replaySeconds / e.storedSeconds, 10);
    }
  }, 60_000);
});
