import { ConfigError, configToYaml } from '../../engine/config/load';
import { loadRunConfig } from '../../engine/preflight';
import { endpointEnvIssues, poolFromConfig, probeIssues } from '../../engine/served/config';
import { runProbePrompt } from '../../engine/training/task-data';
import { UsageError } from '../args';
import { defineCommand } from '../context';
import { printJson } from '../format';

const usage = `Usage:
  marsrl config validate FILE|--preset NAME [--set key.path=value …] [--probe] [--json]
  marsrl config print [--preset NAME] [--config FILE] [--set key.path=value …] [--json]

validate  checks a YAML or JSON run configuration (FILE, or a preset with --preset NAME, with
          FILE over it when both are given) against the schema and prints every problem
          (field path, value given, what is allowed); exit 0 when valid, 2 otherwise. The API key
          variables of served endpoints must be set; --probe also asks each endpoint what it
          serves and supports (unreachable URL, model not served, key refused).
print     prints the fully resolved configuration (every default filled in):
          preset, then file, then overrides.`;

const options = {
  preset: { type: 'string' },
  config: { type: 'string' },
  set: { type: 'string', multiple: true },
  probe: { type: 'boolean', default: false },
} as const;

export const configCommand = defineCommand({
  name: 'config',
  summary: 'validate a config file or print a resolved config',
  usage,
  options,
  maxPositionals: 2,
  async run({ values, positionals }, ctx) {
    const [sub, file] = positionals;
    if (sub === 'validate') {
      if (!file && !values.preset) throw new UsageError('config validate needs a FILE or --preset NAME', usage);
      if (values.config) throw new UsageError('config validate takes the file as its argument; --config belongs to config print', usage);
      const { config } = loadRunConfig({ preset: values.preset, file, overrides: values.set ?? [] });
      const where = file ?? `preset ${values.preset}`;
      const envIssues = endpointEnvIssues(config, ctx.env);
      if (envIssues.length > 0) throw new ConfigError(envIssues, where);
      if (values.probe && config.endpoints) {
        const reports = await poolFromConfig(config, { env: ctx.env, probePrompt: runProbePrompt(config) }).probe();
        const issues = probeIssues(reports);
        if (issues.length > 0) throw new ConfigError(issues, where);
        for (const r of reports) ctx.err(`endpoint ${r.endpoint}: serves ${r.models.join(', ') || '(no list)'}${r.missing.length > 0 ? `; lacks ${r.missing.join(', ')}` : ''}`);
      }
      if (values.json) printJson(ctx.out, { ok: true, file: file ?? null, preset: values.preset ?? null, config });
      else ctx.out(`${where}: valid (seed ${config.seed}, task ${config.task.family}, ${Object.keys(config.policies).length} policies, ${config.optimization.steps} steps)`);
      return 0;
    }
    if (sub === 'print') {
      if (file) throw new UsageError(`config print takes no positional argument (got ${JSON.stringify(file)}); use --config FILE`, usage);
      const { config } = loadRunConfig({ preset: values.preset, file: values.config, overrides: values.set ?? [] });
      if (values.json) printJson(ctx.out, config);
      else ctx.out(configToYaml(config).trimEnd());
      return 0;
    }
    throw new UsageError(sub ? `unknown config subcommand ${JSON.stringify(sub)}; use validate or print` : 'config needs a subcommand: validate or print', usage);
  },
});
