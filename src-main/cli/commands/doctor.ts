import { BACKENDS } from '../../engine/config/schema';
import { doctorReport, formatDoctorReport } from '../../engine/model/doctor';
import { choiceFlag } from '../args';
import { defineCommand } from '../context';
import { printJson } from '../format';
import { RayJobsClient } from '../../engine/engines/ray/client';
import { probeLocal, probeOnCluster } from '../../engine/engines/ray/probe';
import type { EngineProbe } from '../../engine/engines/types';
import { UsageError } from '../args';

const usage = `Usage: marsrl doctor [--backend ${BACKENDS.join('|')}] [--python PATH [--address URL]] [--json]

Shows the tensor backend this machine trains on, its threads and SIMD, the WebGPU adapter
(vendor, architecture, device, driver, limits, shader-f16) and why every other backend was
skipped (the same choice and reasons are stored with every run, and a run with the same
runtime.backend makes the same choice).

With --python (an engine run's engine.python), says instead whether Ray, veRL and DrMAS are
importable by that interpreter and which versions, with torch, vLLM, SGLang and TensorBoard:
run here, or with --address (a Ray dashboard URL) as a one-line job on that cluster, as a
launch checks it.`;

export const doctorCommand = defineCommand({
  name: 'doctor',
  summary: 'show the tensor backend, the WebGPU adapter and why other backends were skipped',
  usage,
  options: { backend: { type: 'string', default: 'auto' }, python: { type: 'string' }, address: { type: 'string' } },
  maxPositionals: 0,
  async run({ values }, ctx) {
    if (values.address !== undefined && values.python === undefined) throw new UsageError('--address goes with --python (the interpreter to ask on that cluster)', usage);
    if (values.python !== undefined) {
      const probe = values.address === undefined ? await probeLocal(values.python) : await probeOnCluster(new RayJobsClient({ address: values.address, field: '--address' }), values.python);
      if (values.json) printJson(ctx.out, probe);
      else ctx.out(formatEngineProbe(probe, values.address));
      return 0;
    }
    choiceFlag('backend', values.backend, BACKENDS, usage);
    const report = await doctorReport(values.backend as (typeof BACKENDS)[number]);
    if (values.json) printJson(ctx.out, report);
    else ctx.out(formatDoctorReport(report));
    return 0;
  },
});

/** What an engine's interpreter has, a line a package, and which engine kinds it can run. */
function formatEngineProbe(probe: EngineProbe, address: string | undefined): string {
  const row = (name: string, version: string | null, why: string) => `  ${name.padEnd(12)} ${version ?? `not importable (${why})`}`;
  const kinds = [probe.verl !== null && !probe.drmas ? 'verl' : null, probe.drmas ? 'drmas' : null].filter(Boolean);
  return [
    `${probe.python}${address ? ` on the cluster at ${address}` : ' on this machine'}:`,
    row('ray', probe.ray, 'pip install "ray[default]"'),
    row('verl', probe.verl, 'pip install verl, or DrMAS\'s checkout with pip install -e .'),
    `  ${'drmas'.padEnd(12)} ${probe.drmas ? `yes (checkout ${probe.drmasRoot ?? 'unknown'})` : 'no (agent_system/ is not beside the verl package)'}`,
    row('torch', probe.torch, 'installed with veRL'),
    row('vllm', probe.vllm, 'pip install vllm, or use engine.rollout_engine=sglang'),
    row('sglang', probe.sglang, 'only needed with engine.rollout_engine=sglang'),
    row('tensorboard', probe.tensorboard, 'pip install tensorboard: DrMAS\'s metrics at full precision'),
    kinds.length ? `engine.kind it can run: ${kinds.join(', ')}` : 'it can run no engine: install veRL or DrMAS into it',
  ].join('\n');
}
