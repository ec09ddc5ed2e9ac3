#!/usr/bin/env node
// `npm run bench -- NAME [options]`. The benchmarks are TypeScript run through tsx's loader, as
// bin/marsrl.js runs the CLI: no build step, and nothing of them in the CLI or the desktop bundle.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('./main.ts');
process.exitCode = await main(process.argv.slice(2), {
  out: (text) => process.stdout.write(`${text}\n`),
  err: (text) => process.stderr.write(`${text}\n`),
});
