import { listPresets } from '../../engine/config/load';
import { parseCommand, printedHelp } from '../args';
import type { Command } from '../context';
import { printJson, table } from '../format';

const usage = `Usage: marsrl presets [--json]

Lists the run presets shipped in resources/presets. Use one with
  marsrl config print --preset NAME`;

export const presetsCommand: Command = {
  name: 'presets',
  summary: 'list the shipped run presets',
  usage,
  async run(argv, ctx) {
    const { values } = parseCommand(argv, {}, usage, 0);
    if (printedHelp(values, usage, ctx)) return 0;
    const presets = listPresets().map(({ name, description }) => ({ name, description }));
    if (values.json) printJson(presets);
    else ctx.out(table(['preset', 'description'], presets.map((p) => [p.name, p.description])));
    return 0;
  },
};
