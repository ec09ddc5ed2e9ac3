/**
 * The follower's spec for a finished folder (issue 39): the same reader that follows a
 * Studio-launched attempt (engines/follow/follower.ts) reads a folder made outside the Studio, with
 * the run folder and the attempt folder both being the imported folder, so every position it
 * reports is relative to what the user imported.
 */
import path from 'node:path';
import { drmasEngineAgents, drmasWorkerGroups, roleOfDrmasAgent } from '../../engines/drmas/agents';
import type { EngineAgent, FollowSpec } from '../../engines/follow/spec';
import { configNumber, configStrings, configValue } from './hydra-config';
import { head, type RunFolder } from './folder';

/**
 * The validation data sources and the largest `@N` of veRL's `val-core/{data_source}/{var}/{metric}@N`
 * keys (v0.7.0 ray_trainer.py:724-740; a data source such as `openai/gsm8k` contains `/`), from the
 * start of the metrics file (the first validation is usually step 0, val_before_train).
 */
export function sniffValidation(file: string | null): { dataSources: string[]; n: number | null } {
  if (file === null) return { dataSources: [], n: null };
  const sources = new Set<string>();
  let n: number | null = null;
  for (const m of head(file, 1 << 20).matchAll(/"val-core\/((?:[^"\\]|\\.)+?)\/(?:acc|reward)\/(?:mean|maj|best)@(\d+)/g)) {
    sources.add(m[1]);
    n = Math.max(n ?? 0, Number(m[2]));
  }
  return { dataSources: [...sources], n };
}

/** DrMAS's agents: from `agent.agent_ids` / `model_ids` / `model_sharing` (ppo_trainer.yaml:293-297), else the ids its hook wrote in the dumps. */
function drmasAgents(folder: RunFolder): EngineAgent[] {
  const config = folder.hydra?.config;
  const ids = config ? configStrings(config, 'agent.agent_ids') : null;
  const models = config ? configStrings(config, 'agent.model_ids') : null;
  if (ids && models && ids.length === models.length) {
    return drmasEngineAgents(drmasWorkerGroups(ids, models, configValue(config!, 'agent.model_sharing') === true));
  }
  return folder.dumpAgents.map((a) => ({ engineId: a.agentId, wgId: a.wgId, role: roleOfDrmasAgent(a.agentId) }));
}

export function followSpecOf(folder: RunFolder): FollowSpec {
  const { root, hydra } = folder;
  const abs = (rel: string | null) => (rel === null ? null : path.join(root, rel));
  const metricsFile = abs(folder.metricsFile);
  const validation = sniffValidation(metricsFile);
  const drmas = folder.engine === 'drmas';
  const configuredN = hydra ? configNumber(hydra.config, drmas ? 'env.rollout.val_n' : 'actor_rollout_ref.rollout.val_kwargs.n') : null;
  return {
    engine: folder.engine,
    engineVersion: 'unknown',
    // veRL 0.9's V1 trainer (`trainer.use_v1`) dumps validation before rollout; DrMAS dumps rollout only.
    dumpOrder: drmas ? 'drmas' : hydra && configValue(hydra.config, 'trainer.use_v1') === true ? 'v1' : 'legacy',
    uid: folder.dumpSample !== null && typeof folder.dumpSample.uid === 'string',
    metricSource: metricsFile !== null ? 'file' : 'console',
    consoleActor: 'TaskRunner',
    files: {
      attemptDir: root,
      metricsFile,
      rolloutDir: abs(folder.rolloutDir) ?? path.join(root, 'rollout'),
      validationDir: abs(folder.validationDir),
      tensorboardDir: abs(folder.tensorboardDir),
      checkpointsDir: abs(folder.checkpointsDir) ?? path.join(root, 'checkpoints'),
    },
    runDir: root,
    localRunDir: root,
    attempt: 1,
    agents: drmas ? drmasAgents(folder) : [{ engineId: 'solver', wgId: 'actor', role: 'solver' }],
    dataSources: validation.dataSources,
    valN: configuredN ?? validation.n ?? 1,
    hook: drmas && folder.dumpSample !== null && typeof folder.dumpSample.agent_id === 'string',
  };
}
