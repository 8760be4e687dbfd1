/**
 * The user-facing Markdown pages, read once for the tests that hold them to the code: the README,
 * CONTRIBUTING.md and every page under `docs/` (the generated `docs/api/` left out).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const root = join(__dirname, '..', '..');

/** One page: its path from the repository root and its text. */
export interface DocPage {
  readonly path: string;
  readonly text: string;
}

const docFiles = readdirSync(join(root, 'docs'), { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.md') && !file.startsWith('api/'))
  .map((file) => `docs/${file}`)
  .sort();

/** README.md first, then CONTRIBUTING.md, then `docs/*.md` in name order. */
export const DOC_PAGES: readonly DocPage[] = ['README.md', 'CONTRIBUTING.md', ...docFiles]
  .filter((path) => existsSync(join(root, path)))
  .map((path) => ({ path, text: readFileSync(join(root, path), 'utf8') }));

/** The page at `path`; throws when there is none. */
export function page(path: string): DocPage {
  const found = DOC_PAGES.find((candidate) => candidate.path === path);
  if (found === undefined) throw new Error(`no page ${path}`);
  return found;
}

/** The lines of `text` outside fenced code blocks, with their index. */
export function proseLines(text: string): { line: string; index: number }[] {
  let fenced = false;
  return text.split('\n').flatMap((line, index) => {
    if (line.startsWith('```')) {
      fenced = !fenced;
      return [];
    }
    return fenced ? [] : [{ line, index }];
  });
}

/** The text under `heading` (a whole heading line) in `text`, up to the next heading of its level or above. */
export function sectionOf(text: string, heading: string): string | undefined {
  const lines = text.split('\n');
  const prose = proseLines(text);
  const start = prose.find(({ line }) => line === heading)?.index;
  if (start === undefined) return undefined;
  const level = heading.indexOf(' ');
  const end = prose.find(
    ({ line, index }) => index > start && /^#+ /.test(line) && line.indexOf(' ') <= level,
  )?.index;
  return lines.slice(start + 1, end).join('\n');
}

/**
 * The text under `heading` on the one page that has it (README, CONTRIBUTING.md or `docs/`);
 * throws when no page or more than one page has that heading.
 */
export function section(heading: string): string {
  const found = DOC_PAGES.flatMap(({ path, text }) => {
    const text_ = sectionOf(text, heading);
    return text_ === undefined ? [] : [{ path, text: text_ }];
  });
  if (found.length !== 1) {
    throw new Error(
      `heading "${heading}" is on ${found.length} pages: ${found.map(({ path }) => path).join(', ')}`,
    );
  }
  return found[0]!.text;
}

/** The cells of every table row in `text`: separator rows left out, header rows kept. */
export function rowsOf(text: string): string[][] {
  return text
    .split('\n')
    .filter((line) => line.startsWith('|') && !/^\|\s*-/.test(line))
    .map((line) =>
      line
        .split('|')
        .slice(1, -1)
        .map((cell) => cell.trim()),
    );
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** The anchors of every heading of `text` (outside code), numbered as GitHub numbers repeats. */
export function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const { line } of proseLines(text)) {
    const match = /^#{1,6} (.+)$/.exec(line);
    if (match === null) continue;
    const base = headingAnchor(match[1]!);
    const count = seen.get(base) ?? 0;
    anchors.add(count === 0 ? base : `${base}-${count}`);
    seen.set(base, count + 1);
  }
  return anchors;
}
