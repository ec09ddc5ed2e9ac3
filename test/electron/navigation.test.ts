import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { externalBrowserUrl, isAllowedRequest, isAppUrl, type AppLocation } from '../../src-main/electron/navigation';

const rendererDir = path.resolve('/opt/marsrl/out/renderer');
const built: AppLocation = { rendererDir };
const dev: AppLocation = { rendererDir, devServerUrl: 'http://localhost:5173/' };
const fileUrl = (file: string): string => pathToFileURL(file).href;

describe('isAppUrl', () => {
  it("accepts the app's own files, with a hash or query", () => {
    expect(isAppUrl(fileUrl(path.join(rendererDir, 'index.html')), built)).toBe(true);
    expect(isAppUrl(`${fileUrl(path.join(rendererDir, 'index.html'))}#/runs/3?tab=metrics`, built)).toBe(true);
    expect(isAppUrl(fileUrl(path.join(rendererDir, 'assets', 'index.js')), built)).toBe(true);
  });

  it('refuses other files, including ones reached by climbing out', () => {
    expect(isAppUrl(fileUrl('/etc/passwd'), built)).toBe(false);
    expect(isAppUrl(fileUrl(path.join(rendererDir, '..', 'main', 'index.js')), built)).toBe(false);
    expect(isAppUrl(`${fileUrl(rendererDir)}/%2e%2e/main/index.js`, built)).toBe(false);
    expect(isAppUrl(fileUrl(`${rendererDir}-evil/index.html`), built)).toBe(false);
    expect(isAppUrl('file://fileserver/share/index.html', built)).toBe(false);
  });

  it('refuses remote pages and script URLs', () => {
    expect(isAppUrl('https://example.com/', built)).toBe(false);
    expect(isAppUrl('http://localhost:5173/', built)).toBe(false);
    expect(isAppUrl('javascript:alert(1)', built)).toBe(false);
    expect(isAppUrl('not a url', built)).toBe(false);
  });

  it('accepts the dev server only on its own origin', () => {
    expect(isAppUrl('http://localhost:5173/index.html', dev)).toBe(true);
    expect(isAppUrl('http://localhost:5174/', dev)).toBe(false);
    expect(isAppUrl('https://localhost:5173/', dev)).toBe(false);
    expect(isAppUrl('http://evil.test/', dev)).toBe(false);
  });
});

describe('isAllowedRequest', () => {
  it('lets the app, inline data and DevTools through', () => {
    expect(isAllowedRequest(fileUrl(path.join(rendererDir, 'assets', 'app.css')), built)).toBe(true);
    expect(isAllowedRequest('data:image/png;base64,AAAA', built)).toBe(true);
    expect(isAllowedRequest('devtools://devtools/bundled/devtools_app.html', built)).toBe(true);
  });

  it('cancels every remote request', () => {
    expect(isAllowedRequest('https://cdn.example.com/font.woff2', built)).toBe(false);
    expect(isAllowedRequest('http://127.0.0.1:8080/api', built)).toBe(false);
    expect(isAllowedRequest('wss://example.com/socket', built)).toBe(false);
  });
});

describe('externalBrowserUrl', () => {
  it('hands only https links to the system browser', () => {
    expect(externalBrowserUrl('https://arxiv.org/abs/2511.11373')).toBe('https://arxiv.org/abs/2511.11373');
    expect(externalBrowserUrl('http://example.com/')).toBeNull();
    expect(externalBrowserUrl('file:///etc/passwd')).toBeNull();
    expect(externalBrowserUrl('smb://server/share')).toBeNull();
    expect(externalBrowserUrl('garbage')).toBeNull();
  });
});
