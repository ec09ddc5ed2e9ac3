/** The metric catalog describes the served-model pool's and a reasoning-system run's keys (issue #16). */
import { describe, expect, it } from 'vitest';
import { describeMetric } from '#shared/metric-catalog';

describe('metric catalog: served models', () => {
  it('names the endpoint of a pool key and gives its unit', () => {
    const latency = describeMetric('pool/judges/latency_ms');
    expect(latency).toMatchObject({ title: 'Request latency', unit: 'milliseconds', subject: 'pool/judges', evaluation: false });
    expect(latency.what).toMatch(/^Served models \(for endpoint judges of the served-model pool\): Mean time/);
    for (const name of ['queue', 'in_flight', 'errors', 'requests', 'replicas_up']) expect(describeMetric(`pool/judges/${name}`).unit).toBe('count');
    expect(describeMetric('pool/judges/completion_tokens').unit).toBe('tokens');
  });

  it("describes a reasoning-system run's own counts and the loop's acceptance share", () => {
    expect(describeMetric('system/calls')).toMatchObject({ title: 'Agent calls', unit: 'count' });
    expect(describeMetric('system/failed_chains').what).toMatch(/error_budget/);
    expect(describeMetric('system/accepted')).toMatchObject({ unit: 'share', range: [0, 1] });
    // Unrelated keys keep their descriptions.
    expect(describeMetric('system/accuracy').title).toBe('Accuracy');
  });
});
