import { describe, expect, it } from 'vitest';
import { awaitIn, drain, drive, type RolloutPause, type RolloutSteps } from '../../src-main/engine/training/rollout';

// A paused computation that awaits twice and releases what it holds in `finally`, as the segment
// decode releases its caches.
function* twoWaits(log: string[], second: Promise<number>): RolloutSteps<number> {
  try {
    const a = yield* awaitIn(Promise.resolve(2), 'first value');
    log.push(`a=${a}`);
    const b = yield* awaitIn(second, 'second value');
    log.push(`b=${b}`);
    return a * b;
  } finally {
    log.push('released');
  }
}

describe('awaited pauses in a rollout computation', () => {
  it('drive resumes each await pause with its value and never hands it to onPause', async () => {
    const log: string[] = [];
    const seen: RolloutPause['kind'][] = [];
    const result = await drive(twoWaits(log, Promise.resolve(21)), (pause) => void seen.push(pause.kind));
    expect(result).toBe(42);
    expect(log).toEqual(['a=2', 'b=21', 'released']);
    expect(seen).toEqual([]);
  });

  it('drive ends the computation (running its finally) when an awaited promise rejects', async () => {
    const log: string[] = [];
    await expect(drive(twoWaits(log, Promise.reject(new Error('replica down'))), () => undefined)).rejects.toThrow('replica down');
    expect(log).toEqual(['a=2', 'released']);
  });

  it('drain refuses an await pause, naming what waited, and releases the computation', () => {
    const log: string[] = [];
    expect(() => drain(twoWaits(log, Promise.resolve(1)))).toThrow(/first value cannot complete synchronously; run this computation with drive\(\)/);
    expect(log).toEqual(['released']);
  });
});
