/**
 * Where MarsRL Studio keeps its data. The desktop app and the CLI must agree, so that runs
 * started from a terminal show up in the window and vice versa; Electron's own
 * `app.getPath('userData')` is not used because the CLI has no Electron. The folder mirrors
 * Electron's convention (appData/<productName>).
 */
import os from 'node:os';
import path from 'node:path';

export const PRODUCT_NAME = 'MarsRL Studio';
export const DATABASE_FILE = 'marsrl.db';

/** The per-user application-data folder of this platform (what Electron calls appData). */
export function appDataDir(env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): string {
  if (platform === 'win32') return env.APPDATA ?? path.join(os.homedir(), 'AppData', 'Roaming');
  if (platform === 'darwin') return path.join(os.homedir(), 'Library', 'Application Support');
  return env.XDG_CONFIG_HOME ?? path.join(os.homedir(), '.config');
}

/** MARSRL_HOME overrides the folder (handy for tests and portable installs). */
export function defaultDataDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.MARSRL_HOME ?? path.join(appDataDir(env), PRODUCT_NAME);
}

/**
 * The per-user exports folder: where an export the app or `marsrl serve` is asked to write to a
 * relative path lands (issue 18: it landed in the server's working directory, a checkout).
 */
export function exportsDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(defaultDataDir(env), 'exports');
}

/** `--db PATH` beats MARSRL_DB, which beats the per-user default. */
export function resolveDatabasePath(explicit?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (explicit) return path.resolve(explicit);
  if (env.MARSRL_DB) return path.resolve(env.MARSRL_DB);
  return path.join(defaultDataDir(env), DATABASE_FILE);
}

/**
 * Each run's files (checkpoints, exports) live beside the database, keyed by run id: `runs/<id>`
 * for the default database file, `<name>.runs/<id>` for any other, so that two databases in one
 * folder (run ids start at 1 in each) never share a run's folder.
 */
export function runDir(databasePath: string, runId: number): string {
  const file = path.basename(databasePath);
  const folder = file === DATABASE_FILE ? 'runs' : `${file.replace(/\.(db|sqlite3?)$/i, '')}.runs`;
  return path.join(path.dirname(databasePath), folder, String(runId));
}
