/**
 * The StudioApi's counterfactual credit (issue 40): one turn's reward and advantage under every
 * reward scheme and normalization mode, and a run's divergence from each alternative per step and
 * agent. The numbers come from engine/rl (counterfactual.ts), the code paths training scores with.
 */
import type { StudioApi } from '#shared/contract';
import { StudioError } from '#shared/errors';
import { runCreditDivergence, turnCounterfactual } from '../engine/rl/credit-run';
import type { ServiceContext } from './context';

type CreditApi = Pick<StudioApi, 'getCounterfactualCredit' | 'getCreditDivergence'>;

export function createCreditApi({ store, requireRun }: ServiceContext): CreditApi {
  return {
    async getCounterfactualCredit(turnId) {
      const credit = turnCounterfactual(store, turnId);
      if (!credit) throw new StudioError('not_found', `turn ${turnId} does not exist or has no advantage (a held-out turn is not trained on); choose a training turn`);
      return credit;
    },

    async getCreditDivergence(runId) {
      requireRun(runId);
      return runCreditDivergence(store, runId);
    },
  };
}
