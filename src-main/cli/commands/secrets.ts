/**
 * `marsrl secrets`: which environment variables may be sent as endpoint API keys, and to which
 * hosts (issue #36, key-approvals.ts). The approvals are this machine's: a config names a
 * variable and a URL, and only an approval made here lets the variable's value go there.
 */
import { allowKey, keyApprovalsFile, loadKeyApprovals, revokeKey } from '../../engine/served/key-approvals';
import { UsageError } from '../args';
import { defineCommand } from '../context';
import { printJson, table } from '../format';

const usage = `Usage:
  marsrl secrets allow VAR --host HOST [--host HOST …]
  marsrl secrets revoke VAR [--host HOST]
  marsrl secrets list [--json]

A run config's endpoint names the environment variable holding its API key (api_key_env) and
the URL it is sent to; both come with the config. The key is sent only to hosts its variable is
approved for here, so a config from elsewhere cannot make a secret (HF_TOKEN, AWS keys …) leave
this machine.

allow    approve VAR for HOST: a host name or IP (any port), HOST:PORT, or the endpoint's URL
revoke   withdraw VAR's approval for HOST, or for every host when --host is left out
list     every approved variable and its hosts (names only; no value is ever stored)

The approvals are kept in key-approvals.json in the Studio's data folder (MARSRL_HOME moves it).`;

export const secretsCommand = defineCommand({
  name: 'secrets',
  summary: 'approve the API key variables endpoints may send, host by host',
  usage,
  options: { host: { type: 'string', multiple: true } },
  maxPositionals: 2,
  async run({ values, positionals }, ctx) {
    const [sub, variable] = positionals;
    const hosts = values.host ?? [];
    if (sub === 'list') {
      if (variable !== undefined) throw new UsageError(`secrets list takes no variable (got ${JSON.stringify(variable)})`, usage);
      const approvals = loadKeyApprovals(ctx.env);
      if (approvals.problem) throw new Error(approvals.problem);
      if (values.json) printJson(ctx.out, { file: keyApprovalsFile(ctx.env), approvals: approvals.list() });
      else if (approvals.list().length === 0) ctx.out(`No API key variable is approved (${keyApprovalsFile(ctx.env)}). Approve one with: marsrl secrets allow VAR --host HOST`);
      else ctx.out(table(['variable', 'hosts'], approvals.list().map((e) => [e.variable, e.hosts.join(', ')])));
      return 0;
    }
    if (sub !== 'allow' && sub !== 'revoke') throw new UsageError(sub ? `unknown secrets subcommand ${JSON.stringify(sub)}; use allow, revoke or list` : 'secrets needs a subcommand: allow, revoke or list', usage);
    if (!variable) throw new UsageError(`secrets ${sub} needs the variable's name, e.g. marsrl secrets ${sub} JUDGE_API_KEY --host 10.0.0.5:8000`, usage);
    if (sub === 'allow') {
      if (hosts.length === 0) throw new UsageError('secrets allow needs --host HOST (the host the key may be sent to)', usage);
      let written = '';
      for (const host of hosts) {
        const { file, host: entry } = allowKey(variable, host, ctx.env);
        written = file;
        ctx.out(`${variable} may be sent as an API key to ${entry}.`);
      }
      ctx.err(`(approvals in ${written})`);
      return 0;
    }
    if (hosts.length > 1) throw new UsageError('secrets revoke takes at most one --host', usage);
    const { file, removed } = revokeKey(variable, hosts[0], ctx.env);
    ctx.out(removed.length === 0 ? `${variable} was not approved for ${hosts[0] ?? 'any host'}; nothing changed.` : `${variable} is no longer sent to ${removed.join(', ')}.`);
    ctx.err(`(approvals in ${file})`);
    return 0;
  },
});
