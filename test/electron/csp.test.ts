import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { contentSecurityPolicy } from '#shared/csp';

function directives(policy: string): Map<string, string[]> {
  return new Map(
    policy.split(';').map((part) => {
      const [name, ...sources] = part.trim().split(/\s+/);
      return [name, sources];
    }),
  );
}

describe('contentSecurityPolicy', () => {
  const shipped = directives(contentSecurityPolicy());

  it('allows only the app itself to provide scripts, styles and connections', () => {
    expect(shipped.get('default-src')).toEqual(["'self'"]);
    expect(shipped.get('script-src')).toEqual(["'self'"]);
    expect(shipped.get('style-src')).toEqual(["'self'"]);
    expect(shipped.get('connect-src')).toEqual(["'self'"]);
    expect(shipped.get('img-src')).toEqual(["'self'", 'data:']);
  });

  it('never allows inline or evaluated code in the shipped policy', () => {
    expect(contentSecurityPolicy()).not.toMatch(/unsafe-inline|unsafe-eval|\*/);
  });

  it('forbids plugins, base rewriting, form posts and framing', () => {
    expect(shipped.get('object-src')).toEqual(["'none'"]);
    expect(shipped.get('base-uri')).toEqual(["'none'"]);
    expect(shipped.get('form-action')).toEqual(["'none'"]);
    expect(shipped.get('frame-ancestors')).toEqual(["'none'"]);
  });

  it('leaves frame-ancestors out of the meta variant, where browsers ignore it', () => {
    const meta = directives(contentSecurityPolicy({ delivery: 'meta' }));
    expect(meta.has('frame-ancestors')).toBe(false);
    expect(meta.get('script-src')).toEqual(["'self'"]);
  });

  it('relaxes only styles and the HMR websocket under the dev server', () => {
    const dev = directives(contentSecurityPolicy({ dev: true }));
    expect(dev.get('style-src')).toContain("'unsafe-inline'");
    expect(dev.get('connect-src')).toContain('ws://localhost:*');
    expect(dev.get('script-src')).toEqual(["'self'"]);
  });

  it('matches the meta tag in src-renderer/index.html', () => {
    const html = fs.readFileSync(path.resolve(import.meta.dirname, '../../src-renderer/index.html'), 'utf8');
    const tag = /<meta http-equiv="Content-Security-Policy" content="([^"]*)"/.exec(html);
    expect(tag?.[1]).toBe(contentSecurityPolicy({ delivery: 'meta' }));
  });
});
