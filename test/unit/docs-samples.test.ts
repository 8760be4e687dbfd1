/**
 * The code samples of the pages under `docs/` cannot rot: every block tagged ```ts file=<path>
 * must equal that file (which `tsc` type-checks, and the integration tests run), and every sample
 * under `test/samples/` must be shown on a page.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');
const pages = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.md'))
  .map((file) => ({ page: `docs/${file}`, text: readFileSync(join(root, 'docs', file), 'utf8') }));
const blocks = pages.flatMap(({ page, text }) =>
  [...text.matchAll(/^```ts file=(\S+)\n([\s\S]*?)^```$/gm)].map((match) => ({
    page,
    file: match[1]!,
    code: match[2]!,
  })),
);
const samples = readdirSync(join(root, 'test', 'samples'), { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.ts'))
  .map((file) => relative(root, join(root, 'test', 'samples', file)));

describe('docs code samples', () => {
  it('shows the coming-from-Powertools samples on its page', () => {
    expect(
      blocks.filter(({ page }) => page === 'docs/coming-from-powertools.md').map(({ file }) => file),
    ).toEqual([
      'test/samples/coming-from-powertools/powertools-handler.ts',
      'test/samples/coming-from-powertools/effectively-once-handler.ts',
      'test/samples/coming-from-powertools/switch-handler.ts',
    ]);
  });

  it('shows every tagged sample exactly as its file is', () => {
    for (const { page, file, code } of blocks) {
      expect({ page, file, code }).toEqual({ page, file, code: readFileSync(join(root, file), 'utf8') });
    }
  });

  it('shows every file under test/samples/ on a page', () => {
    expect(samples.filter((file) => !blocks.some((block) => block.file === file))).toEqual([]);
  });
});
