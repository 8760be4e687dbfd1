/**
 * The README, CONTRIBUTING.md and the pages under `docs/` link to what exists: every relative
 * link names a file or directory of the repository, and every anchor (`#...`, on the same page or
 * another) names a heading of that page, by GitHub's anchor rule.
 */
import { existsSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, DOC_PAGES, headingAnchor, proseLines, root } from './doc-pages';

/** Every inline Markdown link target outside code, with the page it is on. */
const links = DOC_PAGES.flatMap(({ path, text }) =>
  proseLines(text).flatMap(({ line }) =>
    [...line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g)].map((match) => ({
      page: path,
      target: match[1]!,
    })),
  ),
);
const relative = links.filter(({ target }) => !/^[a-z]+:/.test(target));

describe('links in the README and docs', () => {
  it('finds the links it checks: the README links every topic page', () => {
    expect(relative.length).toBeGreaterThan(50);
    const fromReadme = relative.filter(({ page }) => page === 'README.md').map(({ target }) => target);
    for (const { path } of DOC_PAGES.filter(({ path }) => path !== 'README.md')) {
      expect({ path, linked: fromReadme.some((target) => target.split('#')[0] === path) }).toEqual({
        path,
        linked: true,
      });
    }
  });

  it('resolves every relative link to a file of the repository', () => {
    const missing = relative
      .map(({ page, target }) => ({ page, target, file: target.split('#')[0]! }))
      .filter(({ file }) => file !== '')
      .filter(({ page, file }) => !existsSync(join(root, dirname(page), file)));
    expect(missing).toEqual([]);
  });

  it('resolves every anchor to a heading of the page it names', () => {
    const anchors = new Map(DOC_PAGES.map(({ path, text }) => [path, anchorsOf(text)]));
    const broken = relative
      .filter(({ target }) => target.includes('#'))
      .map(({ page, target }) => {
        const [file, anchor] = target.split('#') as [string, string];
        const path = file === '' ? page : normalize(join(dirname(page), file));
        return { page, target, path, anchor };
      })
      .filter(({ path }) => path.endsWith('.md'))
      .filter(({ path, anchor }) => !(anchors.get(path)?.has(anchor) ?? false));
    expect(broken).toEqual([]);
  });

  it('takes anchors as GitHub makes them from headings', () => {
    expect([
      headingAnchor('Quickstart: your own stack'),
      headingAnchor('HTTP: `Idempotency-Key`'),
      headingAnchor('Deploy your own app locally: `effectively-once local`'),
    ]).toEqual([
      'quickstart-your-own-stack',
      'http-idempotency-key',
      'deploy-your-own-app-locally-effectively-once-local',
    ]);
  });
});
