/** Debian's Chromium driven by playwright-core (never a downloaded browser), and screenshots. */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { REPO_ROOT } from '../helpers/cli';

export const CHROMIUM = process.env.MARSRL_CHROMIUM ?? '/usr/bin/chromium';
export const SCREENSHOT_DIR = path.join(REPO_ROOT, 'test-results', 'screenshots');

/** The README's pictures (docs/screenshots): a copy of one of the tests' screenshots under `name`. */
export function keepScreenshot(shot: string, name: string): void {
  fs.copyFileSync(shot, path.join(REPO_ROOT, 'docs', 'screenshots', name));
}

export function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's chromium (apt-get install chromium) or set MARSRL_CHROMIUM`);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
}

export interface PageProblems {
  /** CSP violations reported by the page (directive and what was blocked). */
  csp: string[];
  errors: string[];
}

/** A page that records CSP violations, uncaught errors and console errors for the test to assert on. */
export async function watchedPage(browser: Browser, viewport = { width: 1440, height: 900 }): Promise<{ page: Page; problems: PageProblems }> {
  const page = await browser.newPage({ viewport, deviceScaleFactor: 1 });
  const problems: PageProblems = { csp: [], errors: [] };
  await page.exposeFunction('__reportCsp', (text: string) => problems.csp.push(text));
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      (window as unknown as { __reportCsp(text: string): void }).__reportCsp(`${e.violatedDirective} blocked ${e.blockedURI || '(inline)'}`);
    });
  });
  page.on('pageerror', (error) => problems.errors.push(error.message));
  page.on('console', (message) => {
    if (message.type() === 'error') problems.errors.push(message.text());
  });
  return { page, problems };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}
