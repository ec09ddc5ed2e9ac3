// The checker thread's entry when running from source (thread.ts): TypeScript through tsx's
// loader, registered in this thread as bin/marsrl.js registers it in the main one. A failure to
// load is reported the way judge-thread.ts reports one, so the caller does not wait for nothing.
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

try {
  register();
  await import('./judge-thread.ts');
} catch (error) {
  workerData.port.postMessage({ id: 0, ready: false, failure: String(error?.message ?? error) });
  const counter = new Int32Array(workerData.signal);
  Atomics.add(counter, 0, 1);
  Atomics.notify(counter, 0);
}
