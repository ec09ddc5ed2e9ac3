/**
 * Approving a test's API key variable for its loopback server (issue #36): a key is sent only to
 * hosts its variable is approved for on this machine, so tests approve theirs as a user would.
 */
import { allowKey, KeyApprovals } from '../../src-main/engine/served/key-approvals';
import { tempDir } from './tmp';

/** In-process approvals for a client, pool or run: `{ VAR: ['127.0.0.1'] }`. */
export function approvals(entries: Record<string, string[]>): KeyApprovals {
  return KeyApprovals.of(entries);
}

/**
 * A data folder (MARSRL_HOME) whose approvals file grants `entries`, written by the function
 * behind `marsrl secrets allow`, for tests that spawn `marsrl` or `marsrl serve`.
 */
export function approvedHome(entries: Record<string, string[]>): { dir: string; cleanup: () => void } {
  const home = tempDir('marsrl-home-');
  for (const [variable, hosts] of Object.entries(entries)) for (const host of hosts) allowKey(variable, host, { MARSRL_HOME: home.dir });
  return home;
}
