import { EventEmitter } from 'node:events';
import { describe, expect, it, vi } from 'vitest';

const forked: { modulePath: string; args: string[]; options: Record<string, unknown>; child: FakeChild }[] = [];

class FakeChild extends EventEmitter {
  pid = 4242;
  posted: unknown[] = [];
  killed = false;
  postMessage(message: unknown) {
    this.posted.push(message);
  }
  kill() {
    this.killed = true;
    return true;
  }
}

vi.mock('electron', () => {
  const utilityProcess = {
    fork: (modulePath: string, args: string[], options: Record<string, unknown>) => {
      const child = new FakeChild();
      forked.push({ modulePath, args, options, child });
      return child;
    },
  };
  return { utilityProcess, default: { utilityProcess } };
});

describe('run workers as Electron utility processes', () => {
  it('forks the worker entry with its arguments and maps messages, exit and kill', async () => {
    const { utilityProcessSpawner } = await import('../../src-main/electron/worker-spawner');
    const args = { databasePath: '/data/marsrl.db', runId: 7, resume: false, runDir: '/data/runs/7' };
    const handle = utilityProcessSpawner(args);
    expect(forked).toHaveLength(1);
    expect(forked[0].modulePath).toMatch(/worker\.(ts|js|mjs)$/);
    expect(JSON.parse(forked[0].args[0])).toEqual(args);
    expect(forked[0].options.env).toBe(process.env);
    expect(handle.pid).toBe(4242);

    handle.send({ type: 'stop', reason: 'closing' });
    expect(forked[0].child.posted).toEqual([{ type: 'stop', reason: 'closing' }]);
    const messages: unknown[] = [];
    handle.onMessage((m) => messages.push(m));
    forked[0].child.emit('message', { type: 'started', runId: 7, pid: 4242 });
    expect(messages).toEqual([{ type: 'started', runId: 7, pid: 4242 }]);
    const exits: unknown[] = [];
    handle.onExit((code, signal) => exits.push([code, signal]));
    forked[0].child.emit('exit', 137);
    forked[0].child.emit('exit', 0);
    expect(exits).toEqual([[137, null]]);
    handle.kill();
    expect(forked[0].child.killed).toBe(true);
  });
});
