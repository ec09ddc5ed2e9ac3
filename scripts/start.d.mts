// Types for scripts/start.mjs, which runs as plain JavaScript on a user's Node before anything
// is built; the tests import it through these declarations.
import type { SpawnOptions } from 'node:child_process';

export declare const NATIVE_DIR: string;

export interface NativeSqlitePaths {
  dir: string;
  stagingDir: string;
  builtFile: string;
  addonFile: string;
}
export declare function nativeSqlitePaths(root: string, electronVersion: string): NativeSqlitePaths;

export declare function electronPlatformPath(platform: string): string;

export interface ElectronBinaryStatus {
  installed: boolean;
  executable: string;
  reason: string;
}
export declare function electronBinaryStatus(electronDir: string, version: string, platform: string): ElectronBinaryStatus;

export declare function nodeGypCandidates(
  root: string,
  env: Record<string, string | undefined>,
  execPath: string,
  platform: string,
): string[];
export declare function prebuildInstallArgs(electronVersion: string, platform: string, arch: string): string[];
export declare function nodeGypArgs(electronVersion: string, arch: string): string[];

/** With `capture`, the command's output is collected there instead of shown. */
export type ExecOptions = SpawnOptions & { capture?: string[] };
export type Exec = (command: string, args: string[], options: ExecOptions) => Promise<number>;
export declare function runCommand(command: string, args: string[], options?: ExecOptions): Promise<number>;
/** One paragraph for a failed Electron download: the cause, what to do, and `npx marsrl serve`. */
export declare function electronDownloadFailure(reason: string, output: string): string;

export declare class StartError extends Error {}

export interface StartOptions {
  root: string;
  env?: Record<string, string | undefined>;
  platform?: string;
  arch?: string;
  execPath?: string;
  dryRun?: boolean;
  electronArgs?: string[];
  exec?: Exec;
  log?: (message: string) => void;
}
export declare function start(options: StartOptions): Promise<number>;

export declare function parseArgs(argv: string[]): { dryRun: boolean; electronArgs: string[] };
