/**
 * Entry of the self-contained benches that scripts/device-bench.sh bundles (esbuild) for a GPU
 * machine that has neither the repository's node_modules nor, perhaps, Node.js (issue #15):
 *   node .bench/device/bench.mjs model [bench options]    the model bench (bench/model.ts)
 *   node .bench/device/bench.mjs hf [bench options]       the Hugging Face bench (bench/hf.ts)
 *   node .bench/device/bench.mjs doctor [--backend NAME]  what `marsrl doctor` shows (adapter, limits, skips)
 */
import { BACKENDS } from '../src-main/engine/config/schema';
import { doctorReport, formatDoctorReport } from '../src-main/engine/model/doctor';
import { HF_BENCH_CHILD, run as runHf } from './hf';
import { run } from './model';

const [name, ...rest] = process.argv.slice(2);
if (name === 'model') {
  await run(rest);
} else if (name === 'hf') {
  // The hf bench measures its RL step in fresh processes: through this bundle, not bench/run.js.
  HF_BENCH_CHILD.args = [process.argv[1], 'hf'];
  await runHf(rest);
} else if (name === 'doctor') {
  const backend = rest[0] === '--backend' ? rest[1] : 'auto';
  if (!(BACKENDS as readonly string[]).includes(backend)) {
    console.error(`--backend must be one of ${BACKENDS.join(', ')} (got ${JSON.stringify(backend)})`);
    process.exit(2);
  }
  console.log(formatDoctorReport(await doctorReport(backend as (typeof BACKENDS)[number])));
} else {
  console.error(`usage: bench.mjs model [options] | bench.mjs hf [options] | bench.mjs doctor [--backend NAME]   (got ${JSON.stringify(name ?? '')})`);
  process.exit(2);
}
