/**
 * StudioApi.checkEndpoints (issue #16): the new-run form's "Check endpoints" runs the checks of
 * `marsrl config validate --probe` against real loopback servers, and every finding comes back as
 * an issue on the field to fix; validateConfig already reports a key variable that is not set.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callStudio } from '../../src-main/api/dispatch';
import type { ConfigValidation, EndpointCheckResult, StudioApi } from '#shared/contract';
import { startFaultServer, type FaultServer } from '../served/fault-server';
import { approvedHome } from '../helpers/key-approvals';
import { closedPortUrl, useStudioHome } from '../helpers/env';
import { refusal } from '../helpers/errors';
import { serviceInTemp } from '../helpers/service';

const KEY_VARIABLE = 'MARSRL_TEST_CHECK_ENDPOINTS_KEY';
const MISSING_VARIABLE = 'MARSRL_TEST_CHECK_ENDPOINTS_NEVER_SET';

const studio = serviceInTemp('http', 'marsrl-check-endpoints-');
let service: StudioApi;
let served: FaultServer;
let closedUrl = '';
let home: ReturnType<typeof approvedHome>;
let restoreHome: (() => void) | undefined;

beforeAll(async () => {
  service = studio.service;
  served = await startFaultServer({ model: 'served-model', key: 'the-key' });
  process.env[KEY_VARIABLE] = 'the-key';
  // Issue #36: this process's data folder approves the variable for the loopback server.
  home = approvedHome({ [KEY_VARIABLE]: ['127.0.0.1'] });
  restoreHome = useStudioHome(home.dir);
  delete process.env[MISSING_VARIABLE];
  closedUrl = await closedPortUrl();
});
afterAll(async () => {
  delete process.env[KEY_VARIABLE];
  restoreHome?.();
  home?.cleanup();
  await served?.close();
});

function config(endpoints: Record<string, Record<string, unknown>>): Record<string, unknown> {
  return { policies: { judge: { endpoint: Object.keys(endpoints)[0] }, solver: {}, corrector: {} }, agents: { verifier: 'judge' }, endpoints };
}

describe('checkEndpoints', () => {
  it('passes a served model and says what the server serves', async () => {
    const result = (await callStudio(service, 'checkEndpoints', [config({ good: { base_url: served.baseUrl, model: 'served-model', api_key_env: KEY_VARIABLE } })])) as EndpointCheckResult;
    expect(result.issues).toEqual([]);
    expect(result.ok).toBe(true);
    expect(result.endpoints).toHaveLength(1);
    expect(result.endpoints[0]).toMatchObject({ endpoint: 'good', reachable: true, modelServed: true, models: ['served-model'], error: null });
  });

  it('places an unreachable URL, a missing key variable and a model not served at their fields, all in one check', async () => {
    const result = (await callStudio(service, 'checkEndpoints', [
      config({
        down: { base_url: closedUrl, model: 'served-model' },
        keyless: { base_url: served.baseUrl, model: 'served-model', api_key_env: MISSING_VARIABLE },
        wrong: { base_url: served.baseUrl, model: 'not-this-one', api_key_env: KEY_VARIABLE },
      }),
    ])) as EndpointCheckResult;
    expect(result.ok).toBe(false);
    const byPath = new Map(result.issues.map((i) => [i.path, i.message]));
    expect([...byPath.keys()].sort()).toEqual(['endpoints.down.base_url', 'endpoints.keyless.api_key_env', 'endpoints.wrong.model']);
    expect(byPath.get('endpoints.down.base_url')).toContain(closedUrl.replace(/\/v1$/, ''));
    expect(byPath.get('endpoints.keyless.api_key_env')).toContain(`the environment variable ${MISSING_VARIABLE} is not set`);
    expect(byPath.get('endpoints.wrong.model')).toMatch(/model "not-this-one" is not served at .* \(it serves "served-model"\)/);
    expect(result.endpoints.map((e) => [e.endpoint, e.reachable])).toEqual([['down', false], ['keyless', false], ['wrong', true]]);
  });

  it('answers the schema’s issues first (nothing is probed for a config that does not validate)', async () => {
    const before = served.seen.length;
    const result = (await callStudio(service, 'checkEndpoints', [config({ bad: { base_url: 'localhost:8000', model: 'served-model' } })])) as EndpointCheckResult;
    expect(result.ok).toBe(false);
    expect(result.endpoints).toEqual([]);
    expect(result.issues.map((i) => i.path)).toEqual(['endpoints.bad.base_url']);
    expect(result.issues[0].message).toMatch(/http\(s\) URL including the API prefix/);
    expect(served.seen.length).toBe(before);
  });

  it('validateConfig reports a key variable that is not set, as `marsrl config validate` does', async () => {
    const result = (await callStudio(service, 'validateConfig', [config({ keyless: { base_url: served.baseUrl, model: 'served-model', api_key_env: MISSING_VARIABLE } })])) as ConfigValidation;
    expect(result.ok).toBe(false);
    expect(!result.ok && result.issues.map((i) => i.path)).toEqual(['endpoints.keyless.api_key_env']);
  });

  it('rejects a payload that is not a config object at the boundary', async () => {
    for (const args of [[], ['endpoints'], [[1, 2]], [null]]) {
      const shape = await refusal(service, 'checkEndpoints', args);
      expect(shape?.code, JSON.stringify(args)).toBe('invalid_request');
      expect(shape?.message).toMatch(/invalid arguments for checkEndpoints: checkEndpoints(\.0)?: /);
    }
  });
});
