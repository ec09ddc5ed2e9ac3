/**
 * Entry of the self-contained model bench that scripts/device-bench.sh bundles (esbuild) for a GPU
 * machine that has neither the repository's node_modules nor, perhaps, Node.js (issue #15):
 * `node .bench/device/bench.mjs model [bench options]`. Only the model bench is bundled.
 */
import { run } from './model';

const [name, ...rest] = process.argv.slice(2);
if (name !== 'model') {
  console.error(`usage: bench.mjs model [options]   (only the model bench is bundled; got ${JSON.stringify(name ?? '')})`);
  process.exit(2);
}
await run(rest);
