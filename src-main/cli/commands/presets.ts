import { listPresets } from '../../engine/config/load';
import { defineCommand } from '../context';
import { printJson, table } from '../format';

const usage = `Usage: marsrl presets [--json]

Lists the run presets shipped in resources/presets. Use one with
  marsrl config print --preset NAME`;

export const presetsCommand = defineCommand({
  name: 'presets',
  summary: 'list the shipped run presets',
  usage,
  options: {},
  maxPositionals: 0,
  async run({ values }, ctx) {
    const presets = listPresets().map(({ name, description }) => ({ name, description }));
    if (values.json) printJson(ctx.out, presets);
    else ctx.out(table(['preset', 'description'], presets.map((p) => [p.name, p.description])));
    return 0;
  },
});
