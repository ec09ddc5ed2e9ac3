import { BACKENDS } from '../../engine/config/schema';
import { doctorReport, formatDoctorReport } from '../../engine/model/doctor';
import { choiceFlag } from '../args';
import { defineCommand } from '../context';
import { printJson } from '../format';

const usage = `Usage: marsrl doctor [--backend ${BACKENDS.join('|')}] [--json]

Shows the tensor backend this machine trains on, its threads and SIMD, the WebGPU adapter
(vendor, architecture, device, driver, limits, shader-f16) and why every other backend was
skipped (the same choice and reasons are stored with every run, and a run with the same
runtime.backend makes the same choice).`;

export const doctorCommand = defineCommand({
  name: 'doctor',
  summary: 'show the tensor backend, the WebGPU adapter and why other backends were skipped',
  usage,
  options: { backend: { type: 'string', default: 'auto' } },
  maxPositionals: 0,
  async run({ values }, ctx) {
    choiceFlag('backend', values.backend, BACKENDS, usage);
    const report = await doctorReport(values.backend as (typeof BACKENDS)[number]);
    if (values.json) printJson(report);
    else ctx.out(formatDoctorReport(report));
    return 0;
  },
});
