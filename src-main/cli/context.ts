import { resolveDatabasePath } from '../engine/paths';
import { openStore, type Store } from '../engine/store';
import { createStudioService } from '../api/service';
import type { StudioApi } from '../../src-preload/api';

export interface CommandContext {
  env: NodeJS.ProcessEnv;
  out: (text: string) => void;
  err: (text: string) => void;
}

export interface Command {
  name: string;
  summary: string;
  usage: string;
  /** Returns the process exit code. */
  run(argv: string[], ctx: CommandContext): Promise<number>;
}

/** The store and service a command works on: `--db PATH` beats MARSRL_DB beats the per-user default. */
export function openCliStudio(dbFlag: string | undefined, env: NodeJS.ProcessEnv): { store: Store; service: StudioApi; databasePath: string } {
  const databasePath = resolveDatabasePath(dbFlag, env);
  const store = openStore(databasePath);
  return { store, service: createStudioService({ store, databasePath, transport: 'direct' }), databasePath };
}
