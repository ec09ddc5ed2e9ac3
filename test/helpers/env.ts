/**
 * The process environment a test file changes for its duration: the Studio's data folder
 * (MARSRL_HOME: key approvals, exports) and a loopback URL where nothing listens.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * Points MARSRL_HOME at `dir` (this process and the workers it spawns read it); the returned
 * function puts the variable back as it was, unset included.
 */
export function useStudioHome(dir: string): () => void {
  const previous = process.env.MARSRL_HOME;
  process.env.MARSRL_HOME = dir;
  return () => {
    if (previous === undefined) delete process.env.MARSRL_HOME;
    else process.env.MARSRL_HOME = previous;
  };
}

/** An OpenAI-style base URL on a loopback port that was just free: nothing listens there once the probe is closed. */
export async function closedPortUrl(): Promise<string> {
  const probe = http.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(probe.address() as AddressInfo).port}/v1`;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return url;
}
