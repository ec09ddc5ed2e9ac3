// The off-thread worker's entry when running from source (off-thread.ts): TypeScript through
// tsx's loader, registered in this thread as bin/marsrl.js registers it in the main one.
import { register } from 'tsx/esm/api';

register();
await import('./off-thread-worker.ts');
