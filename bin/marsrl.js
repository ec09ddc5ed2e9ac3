#!/usr/bin/env node
// The `marsrl` command. The CLI is TypeScript run through tsx's loader, so a fresh clone works
// right after `npm ci` with no build step, and the same source serves the desktop app's bundle.
import { register } from 'tsx/esm/api';

register();
const { runCli } = await import('../src-main/cli/main.ts');
await runCli();
