/** "Ran for" (issue 18): a run's running spans from its events, against hand-written timelines. */
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runningSpans } from '../../src-main/api/views';
import { openStore } from '../../src-main/engine/store';
import { tempDir } from '../helpers/tmp';

const tmp = tempDir('marsrl-spans-');
const store = openStore(path.join(tmp.dir, 'spans.db'));
afterAll(() => {
  store.close();
  tmp.cleanup();
});

const T0 = 1_000_000;
const event = (runId: number, kind: string, time: number) => store.events.insertEvent.run({ runId, step: null, time, level: 'info', kind, message: kind, data: null });
const newRun = () => store.runs.create({ name: 'r', config: {}, codeVersion: 't', seed: 1 }, T0);

describe('running spans', () => {
  it('is empty before a run starts', () => {
    expect(runningSpans(store, store.runs.get(newRun())!)).toEqual([]);
  });

  it('leaves out the time between a stop and the resume, and keeps the span still running open', () => {
    const id = newRun();
    store.runs.setStatus(id, 'running', null, T0 + 10);
    event(id, 'interrupted', T0 + 110);
    store.runs.setStatus(id, 'interrupted', 'stopped', T0 + 110);
    event(id, 'resumed', T0 + 1000);
    store.runs.setStatus(id, 'running', null, T0 + 1000);
    expect(runningSpans(store, store.runs.get(id)!)).toEqual([
      { start: T0 + 10, end: T0 + 110 },
      { start: T0 + 1000, end: null },
    ]);
  });

  it('closes a span at the failure that ended it, and one whose worker vanished at the next resume', () => {
    const id = newRun();
    store.runs.setStatus(id, 'running', null, T0);
    // Killed without a stop event (marked interrupted later by stale-run recovery): counted until the resume.
    event(id, 'resumed', T0 + 500);
    event(id, 'training_error', T0 + 800);
    store.runs.setStatus(id, 'failed', 'NaN', T0 + 801);
    expect(runningSpans(store, store.runs.get(id)!)).toEqual([
      { start: T0, end: T0 + 500 },
      { start: T0 + 500, end: T0 + 800 },
    ]);
  });

  it('ends the last span at the run end for a finished run', () => {
    const id = newRun();
    store.runs.setStatus(id, 'running', null, T0);
    store.runs.setStatus(id, 'done', null, T0 + 300);
    expect(runningSpans(store, store.runs.get(id)!)).toEqual([{ start: T0, end: T0 + 300 }]);
  });
});
