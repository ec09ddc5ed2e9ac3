/**
 * The short form of `npm run bench -- reliability` (issue #17): real SIGKILLs of real `marsrl`
 * processes, the faults, the bad-input corpus and a small load, with the figures the bench prints
 * held to what they must be.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MOMENTS, runReliability, trialPlan, VICTIMS, type ReliabilityReport } from '../../bench/reliability';

let dir: string;
let report: ReliabilityReport;

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'marsrl-reliability-test-'));
  report = await runReliability({ trials: 2, seed: 5, clients: 8, loadSteps: 2, faults: true, load: true, dir });
}, 540_000);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('reliability suite (short form)', () => {
  it('plans every moment in turn, each moment\'s two trials with different victims', () => {
    const plan = trialPlan(10);
    expect(plan.map((p) => p.moment)).toEqual([...MOMENTS, ...MOMENTS]);
    for (let i = 0; i < MOMENTS.length; i++) expect(plan[i].victim, MOMENTS[i]).not.toBe(plan[i + MOMENTS.length].victim);
    expect(new Set(plan.map((p) => p.victim))).toEqual(new Set(VICTIMS));
  });

  it('a SIGKILLed run loses no committed row, keeps the database intact, and resumes to done with one attempt per step', () => {
    expect(report.trials).toHaveLength(2);
    for (const t of report.trials) {
      expect(t.integrity, `trial ${t.trial}`).toBe('ok');
      expect(t.committedBefore, `trial ${t.trial}: rows were committed before the kill`).toBeGreaterThan(0);
      expect(t.lostLive, `trial ${t.trial}`).toBe(0);
      expect(t.lostAny, `trial ${t.trial}`).toBe(0);
      expect(t.oneAttemptPerStep, `trial ${t.trial}`).toBe(true);
      expect(t.resumedToDone, `trial ${t.trial}: ${t.note}`).toBe(true);
      // Killed mid-run (not the export trial): the resume is a second attempt.
      if (t.moment !== 'export') expect(t.attempts, `trial ${t.trial}`).toBe(2);
    }
  });

  it('faults: disk full (or a stated skip), bad checkpoints, locks and a second resume are each handled', () => {
    const byName = new Map(report.faults.map((f) => [f.fault, f]));
    const diskFull = [...byName.values()].find((f) => f.fault.startsWith('disk full'))!;
    if (diskFull.outcome === 'skipped') expect(diskFull.detail).toMatch(/cannot mount a tmpfs here/);
    else {
      expect(diskFull.outcome, diskFull.detail).toBe('ok');
      expect(diskFull.detail).toMatch(/is full.*free some space.*marsrl resume/);
    }
    for (const f of report.faults.filter((x) => x !== diskFull)) {
      expect(f.outcome, `${f.fault}: ${f.detail}`).toBe('ok');
      expect(f.integrity).toBe('ok');
    }
    expect(byName.get('newest checkpoint truncated')!.detail).toMatch(/checkpoint of step (\d+) in .*step-0+\1 cannot be loaded \(.*bytes, expected.*resumed from the checkpoint of step/);
    expect(byName.get('every checkpoint corrupted')!.detail).toMatch(/checksum mismatch.*Restore the checkpoint folder from a backup/);
    expect(byName.get('two marsrl resume of one run at once')!.detail).toMatch(/being resumed by another process/);
    expect(report.faults).toHaveLength(6);
  });

  it('at least 50 distinct bad inputs, each refused with a message naming the field or file, nothing written', () => {
    expect(report.bad_inputs.length).toBeGreaterThanOrEqual(50);
    expect(new Set(report.bad_inputs.map((b) => b.input)).size).toBe(report.bad_inputs.length);
    const categories = new Set(report.bad_inputs.map((b) => b.category));
    expect([...categories].sort()).toEqual(['cli', 'config', 'export path', 'http', 'ipc', 'model folder', 'study', 'task file']);
    for (const b of report.bad_inputs) {
      expect(b.error.startsWith('(accepted'), `${b.input} was accepted`).toBe(false);
      expect(b.namesIt, `${b.input}: ${b.error}`).toBe(true);
      expect(b.nothingWritten, `${b.input} wrote something`).toBe(true);
    }
  });

  it('under load every pushed event reaches every WebSocket client in order, and pages answer', () => {
    const load = report.load!;
    expect(load.clients).toBe(8);
    expect(load.runsDone).toBe(2);
    expect(load.events).toBeGreaterThan(0);
    expect(load.clientsWithGaps).toBe(0);
    expect(load.allInOrder).toBe(true);
    expect(load.requests).toBeGreaterThan(10);
    expect(load.p50Ms).toBeLessThanOrEqual(load.p99Ms);
  });
});
