/**
 * veRL and DrMAS run folders (issue 39): two formats over one reader (format.ts). DrMAS is a veRL
 * fork; a folder is DrMAS's when its Hydra config has DrMAS's `agent` block (`agent.agent_ids`,
 * DrMAS ppo_trainer.yaml:293-306) or, without a config, when its dumps carry the agent ids the
 * Studio's hook writes.
 */
import { runFolderFormat } from './format';

export const verlFormat = runFolderFormat('verl', 'veRL run folder');
export const drmasFormat = runFolderFormat('drmas', 'DrMAS run folder');
