/**
 * The new-run form's served endpoints in a real browser (issue #16): endpoints typed into the
 * form, a policy served by one, and "Check endpoints" probing real loopback servers — an
 * unreachable URL, an API key variable that is not set and a model the server does not serve
 * each placed at its field with the message `marsrl config validate --probe` prints; fixed, the
 * check passes.
 */
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateConfig } from '../../src-main/engine/preflight';
import { endpointEnvIssues, poolFromConfig, probeIssues } from '../../src-main/engine/served/config';
import { allowKey } from '../../src-main/engine/served/key-approvals';
import { closedPortUrl, useStudioHome } from '../helpers/env';
import { startFaultServer, type FaultServer } from '../served/fault-server';
import { keepScreenshot, screenshot } from './browser';
import { seedStudio } from '../helpers/seed';
import { POLL, studioInChromium } from './studio-session';

const KEY_VARIABLE = 'MARSRL_E2E_ENDPOINT_KEY';
const MISSING_VARIABLE = 'MARSRL_E2E_ENDPOINT_KEY_NEVER_SET';
// Set before the session's `marsrl serve` starts (it inherits this environment), as a user
// exports the key before starting the Studio.
process.env[KEY_VARIABLE] = 'e2e-key';
delete process.env[MISSING_VARIABLE];

let page: Page;
let served: FaultServer;
let closedUrl = '';
let restoreHome: (() => void) | undefined;
// Issue #36: the session's data folder (its `marsrl serve` reads it) approves the key variable for
// the loopback servers, as a user runs `marsrl secrets allow VAR --host 127.0.0.1`; this process
// reads the same folder, so the CLI's messages below are computed against the same approvals.
const session = studioInChromium('endpoints', (store, dir) => {
  seedStudio(store);
  allowKey(KEY_VARIABLE, '127.0.0.1', { MARSRL_HOME: path.join(dir, 'home') });
});
beforeAll(async () => {
  ({ page } = session);
  restoreHome = useStudioHome(path.join(session.dir, 'home'));
  served = await startFaultServer({ model: 'served-model', key: 'e2e-key' });
  closedUrl = await closedPortUrl();
});
afterAll(async () => {
  delete process.env[KEY_VARIABLE];
  restoreHome?.();
  await served?.close();
});

/**
 * The first endpoint is added with the button; later ones with Enter in the name field, which
 * the form also takes. A click can miss: the previous endpoint's fields revalidate meanwhile, and
 * a message appearing above the button (the unset key variable's) moves it between Playwright's
 * check and its click, so the click lands on the page (CI run of cca99c0).
 */
async function addEndpoint(name: string, fields: Record<string, string>, how: 'button' | 'enter' = 'enter'): Promise<void> {
  const nameInput = page.getByLabel('New endpoint name');
  await nameInput.fill(name);
  if (how === 'button') await page.getByTestId('add-endpoint').click();
  else await nameInput.press('Enter');
  await page.locator(`[data-endpoint="${name}"]`).waitFor();
  for (const [field, value] of Object.entries(fields)) await page.locator(`#field-endpoints-${name}-${field}`).fill(value);
}

/** What the CLI's checks say about one endpoint alone (`marsrl config validate --probe` stops at the first kind of problem). */
async function cliMessages(endpoint: Record<string, unknown>): Promise<Map<string, string>> {
  const checked = validateConfig({ endpoints: { only: endpoint } });
  if (!checked.ok) throw new Error(JSON.stringify(checked.issues));
  const env = endpointEnvIssues(checked.config);
  const issues = env.length ? env : probeIssues(await poolFromConfig(checked.config).probe());
  return new Map(issues.map((i) => [i.path.replace('endpoints.only.', ''), i.message.replaceAll('endpoint only', 'endpoint NAME')]));
}

function placed(path: string) {
  return page.locator(`[data-issue-path="${path}"]`);
}

describe('new-run form: served endpoints', () => {
  it('places an unreachable URL, a missing key variable and a model not served at their fields; fixed, the check passes', async () => {
    await session.open('#/runs');
    await session.open('#/new');
    await expect.poll(() => page.getByTestId('form-status').textContent(), POLL).toMatch(/Valid/);
    expect(await page.getByTestId('check-endpoints').isDisabled()).toBe(true);

    await addEndpoint('down', { base_url: closedUrl, model: 'served-model' }, 'button');
    await addEndpoint('keyless', { base_url: served.baseUrl, model: 'served-model', api_key_env: MISSING_VARIABLE });
    await addEndpoint('wrong', { base_url: served.baseUrl, model: 'not-this-one', api_key_env: KEY_VARIABLE });
    // The key field takes a variable's NAME: a key pasted there is refused by the schema.
    expect(await page.locator('[data-endpoint="wrong"] input[type="password"]').count()).toBe(0);
    await page.locator('#field-policies-verifier-endpoint').selectOption('wrong');
    await expect.poll(() => page.locator('[data-endpoint="wrong"]').textContent(), POLL).toMatch(/plays verifier/);
    // A new endpoint shows the schema's defaults as its values.
    expect(await page.locator('#field-endpoints-down-concurrency').inputValue()).toBe('8');
    expect(await page.locator('#field-endpoints-down-timeout_s').inputValue()).toBe('120');
    expect(await page.locator('#field-endpoints-down-retries').inputValue()).toBe('3');

    // The variable that is not set is found while typing (as `marsrl config validate` finds it).
    await expect.poll(() => placed('endpoints.keyless.api_key_env').textContent(), POLL).toContain(`the environment variable ${MISSING_VARIABLE} is not set`);
    await expect.poll(() => page.getByTestId('form-status').textContent(), POLL).toMatch(/1 problem to fix/);

    await page.getByTestId('check-endpoints').click();
    await expect.poll(() => page.getByTestId('endpoint-check-status').textContent(), POLL).toMatch(/3 endpoint problems, placed at their fields/);
    const down = (await cliMessages({ base_url: closedUrl, model: 'served-model' })).get('base_url');
    const keyless = (await cliMessages({ base_url: served.baseUrl, model: 'served-model', api_key_env: MISSING_VARIABLE })).get('api_key_env');
    const wrong = (await cliMessages({ base_url: served.baseUrl, model: 'not-this-one', api_key_env: KEY_VARIABLE })).get('model');
    expect(down).toBeTruthy();
    expect(keyless).toBeTruthy();
    expect(wrong).toMatch(/model "not-this-one" is not served/);
    expect((await placed('endpoints.down.base_url').textContent())?.trim()).toBe(down!.replaceAll('endpoint NAME', 'endpoint down'));
    expect((await placed('endpoints.keyless.api_key_env').textContent())?.trim()).toBe(keyless!.replaceAll('endpoint NAME', 'endpoint keyless'));
    expect((await placed('endpoints.wrong.model').textContent())?.trim()).toBe(wrong!.replaceAll('endpoint NAME', 'endpoint wrong'));
    // Each message at its own field and nowhere else on the endpoint.
    expect(await page.locator('[data-endpoint="down"] [data-issue-path]').count()).toBe(1);
    expect(await page.locator('[data-endpoint="keyless"] [data-issue-path]').count()).toBe(1);
    expect(await page.locator('[data-endpoint="wrong"] [data-issue-path]').count()).toBe(1);
    expect(await page.getByTestId('launch').isDisabled()).toBe(true);
    // A taller window for the picture, so the three endpoints' findings are in one view.
    await page.setViewportSize({ width: 1440, height: 1500 });
    await page.locator('#group-endpoints').evaluate((el) => el.scrollIntoView({ block: 'start' }));
    const shot = await screenshot(page, 'new-run-endpoints');
    await page.setViewportSize({ width: 1440, height: 900 });
    keepScreenshot(shot, 'new-run-endpoints.png');

    // Fixed: every endpoint answers and serves its model.
    await page.locator('#field-endpoints-down-base_url').fill(served.baseUrl);
    await page.locator('#field-endpoints-down-api_key_env').fill(KEY_VARIABLE);
    await page.locator('#field-endpoints-keyless-api_key_env').fill(KEY_VARIABLE);
    await page.locator('#field-endpoints-wrong-model').fill('served-model');
    await expect.poll(() => page.getByTestId('form-status').textContent(), POLL).toMatch(/Valid/);
    await page.getByTestId('check-endpoints').click();
    await expect.poll(() => page.getByTestId('endpoint-check-status').textContent(), POLL).toMatch(/All 3 endpoints answered and serve their model/);
    expect(await page.locator('[data-endpoint] [data-issue-path]').count()).toBe(0);
    expect(await page.locator('[data-endpoint="wrong"] [data-testid="endpoint-report"]').textContent()).toMatch(/serves served-model/);
    // The probe went to the server with the key from the variable, never from the form.
    expect(served.seen.some((r) => r.authorization === 'Bearer e2e-key')).toBe(true);
  });
});
