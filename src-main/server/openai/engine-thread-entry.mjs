// The engine thread's entry when running from source (engine.ts): TypeScript through tsx's
// loader, registered in this thread as bin/marsrl.js registers it in the main one.
import { register } from 'tsx/esm/api';

register();
await import('./engine-thread.ts');
