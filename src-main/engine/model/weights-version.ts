/**
 * The weights version of the policy seam (policy-model.ts `version`), one definition for every
 * family: a number that changes whenever the state a decode cache was computed from changed. A
 * variable whose value was replaced (an optimizer step, setWeights, any `assign`) has a new
 * TensorFlow.js dataId, so the state is the variables' dataIds (and, for LoRA, whether the
 * adapters are on). Each family draws from its own sequence, offset from the others', and every
 * model of the family from the same one, so a cache never mistakes another model's for its own.
 */

/** The numbers one family's versions are drawn from, counting up from `start` (exclusive). */
export class VersionSequence {
  constructor(private last: number) {}

  next(): number {
    return ++this.last;
  }
}

export class WeightsVersion {
  private value: number;
  private seen: unknown[] = [];

  /** Draws the first version at once; `state` lists what a change of the weights changes. */
  constructor(
    private readonly sequence: VersionSequence,
    private readonly state: () => unknown[],
  ) {
    this.value = sequence.next();
  }

  /** Record the state the first version stands for (at the end of the model's constructor). */
  watch(): void {
    this.seen = this.state();
  }

  /** The version: a fresh one from the sequence when the state changed since it was last seen. */
  current(): number {
    const now = this.state();
    if (now.some((x, i) => x !== this.seen[i])) {
      this.seen = now;
      this.value = this.sequence.next();
    }
    return this.value;
  }
}
