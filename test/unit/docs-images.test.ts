/**
 * The inbox + outbox diagram (`docs/images/inbox-outbox.svg`) renders wherever the README is
 * read: it is well-formed XML with a `viewBox` and a white background, it runs nothing and loads
 * nothing (no script, no event handler, no reference outside the file), and every node the
 * pages embedding it name in its alt text is a label of the picture.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { page, root } from './doc-pages';

/** One element of a parsed XML document. */
interface XmlElement {
  readonly name: string;
  readonly attributes: Readonly<Record<string, string>>;
  /** The text directly inside the element, entities decoded. */
  text: string;
}

const ENTITIES: Readonly<Record<string, string>> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
const NAME = '[A-Za-z_][\\w.:-]*';
const START_TAG = new RegExp(`^<(${NAME})((?:\\s+${NAME}\\s*=\\s*(?:"[^"<]*"|'[^'<]*'))*)\\s*(/?)>$`);
const ATTRIBUTE = new RegExp(`(${NAME})\\s*=\\s*(?:"([^"<]*)"|'([^'<]*)')`, 'g');
const END_TAG = new RegExp(`^</(${NAME})\\s*>$`);

function decode(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);/g, (_, entity: string) => {
    if (entity.startsWith('#x')) return String.fromCodePoint(Number.parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(Number(entity.slice(1)));
    const value = ENTITIES[entity];
    if (value === undefined) throw new Error(`unknown entity &${entity};`);
    return value;
  });
}

/**
 * The elements of `xml` in document order; throws at the first well-formedness error it checks:
 * a tag that does not close, an unquoted or repeated attribute, a bare `&`, a mismatched or
 * missing end tag, content outside the one root element. (No DTDs: the diagram has none.)
 */
function parseXml(xml: string): XmlElement[] {
  const elements: XmlElement[] = [];
  const open: XmlElement[] = [];
  let roots = 0;
  let offset = 0;
  for (const match of xml.matchAll(/<!--[\s\S]*?-->|<\?[\s\S]*?\?>|<[^<>]*>|[^<]+/g)) {
    // A character no token matches (a `<` that starts no tag) leaves a gap before the next one.
    if (match.index !== offset) throw new Error(`not well-formed at offset ${offset}`);
    const [token] = match;
    offset += token.length;
    if (token.startsWith('<!--') || token.startsWith('<?')) continue;
    if (!token.startsWith('<')) {
      if (/&(?!(#x[0-9a-fA-F]+|#[0-9]+|[a-z]+);)/.test(token)) throw new Error(`bare & in ${token}`);
      if (open.length === 0) {
        if (token.trim() !== '') throw new Error(`text outside the root: ${token.trim()}`);
        continue;
      }
      open[open.length - 1]!.text += decode(token);
      continue;
    }
    const end = END_TAG.exec(token);
    if (end !== null) {
      const element = open.pop();
      if (element?.name !== end[1]) throw new Error(`</${end[1]}> closes <${element?.name}>`);
      continue;
    }
    const start = START_TAG.exec(token);
    if (start === null) throw new Error(`malformed tag ${token}`);
    const attributes: Record<string, string> = {};
    for (const [, name, double, single] of start[2]!.matchAll(ATTRIBUTE)) {
      if (name! in attributes) throw new Error(`attribute ${name} repeated in ${token}`);
      attributes[name!] = decode(double ?? single ?? '');
    }
    if (open.length === 0 && ++roots > 1) throw new Error(`a second root element <${start[1]}>`);
    const element: XmlElement = { name: start[1]!, attributes, text: '' };
    elements.push(element);
    if (start[3] !== '/') open.push(element);
  }
  if (offset !== xml.length) throw new Error(`not well-formed at offset ${offset}`);
  if (open.length > 0) throw new Error(`<${open[open.length - 1]!.name}> is not closed`);
  if (roots !== 1) throw new Error('no root element');
  return elements;
}

const diagram = readFileSync(join(root, 'docs', 'images', 'inbox-outbox.svg'), 'utf8');
const elements = parseXml(diagram);
const labels = new Set(elements.filter(({ name }) => name === 'text').map(({ text }) => text));

/**
 * The nodes an embedding's alt text names: `<intro>: A → B (b1, b2) → C. <more sentences>`
 * gives A, B, b1, b2 and C.
 */
function namedNodes(alt: string): string[] {
  const chain = /^[^:]+: (.+?)\.(?: |$)/.exec(alt)?.[1];
  if (chain === undefined) throw new Error(`alt text without a chain: ${alt}`);
  return chain.split(' → ').flatMap((node) => {
    const [, name, parts] = /^(.+?)(?: \((.+)\))?$/.exec(node)!;
    return [name!, ...(parts === undefined ? [] : parts.split(', '))];
  });
}

describe('the inbox + outbox diagram', () => {
  it.each([
    ['<svg><text>a</svg>', '</svg> closes <text>'],
    ['<svg><rect x=1/></svg>', 'malformed tag <rect x=1/>'],
    ['<svg x="1" x="2"/>', 'attribute x repeated in <svg x="1" x="2"/>'],
    ['<svg><text>a & b</text></svg>', 'bare & in a & b'],
    ['<svg><text>a</text>', '<svg> is not closed'],
    ['<svg/><svg/>', 'a second root element <svg>'],
    ['<svg><text a="1"</svg>', 'not well-formed at offset 5'],
  ])('the XML check rejects %s', (xml, message) => {
    expect(() => parseXml(xml)).toThrow(message);
  });

  it('is well-formed SVG with a viewBox, drawn on a white rectangle that covers it', () => {
    const [svg, ...drawn] = elements;
    expect(svg!.name).toBe('svg');
    expect(svg!.attributes.xmlns).toBe('http://www.w3.org/2000/svg');
    expect(svg!.attributes.viewBox).toMatch(/^0 0 \d+ \d+$/);
    const [, , width, height] = svg!.attributes.viewBox!.split(' ');
    expect(drawn.find(({ name }) => name === 'rect')?.attributes).toEqual({
      x: '0',
      y: '0',
      width,
      height,
      fill: '#ffffff',
    });
  });

  it('runs and loads nothing: no script, no event handler, no reference outside the file', () => {
    expect(
      elements.filter(({ name }) => ['script', 'foreignObject', 'image', 'iframe'].includes(name)),
    ).toEqual([]);
    const attributes = elements.flatMap(({ attributes }) => Object.entries(attributes));
    expect(attributes.filter(([name]) => /^on/i.test(name))).toEqual([]);
    expect(attributes.filter(([name, value]) => /href$/.test(name) && !value.startsWith('#'))).toEqual([]);
    // In attributes and in the style sheet: only `url(#...)`, and no `@import`.
    expect(
      [...diagram.matchAll(/url\(\s*['"]?([^)'"]*)/g)].filter((match) => !match[1]!.startsWith('#')),
    ).toEqual([]);
    expect(diagram).not.toMatch(/@import|@font-face|javascript:/i);
  });

  it.each([
    ['README.md', 'docs/images/inbox-outbox.svg'],
    ['docs/outbox.md', 'images/inbox-outbox.svg'],
  ])('labels every node %s names in its alt text', (path, source) => {
    const embeddings = [...page(path).text.matchAll(/!\[([^\]]+)\]\(([^)]+)\)/g)].filter(
      (match) => match[2] === source,
    );
    expect(embeddings).toHaveLength(1);
    const nodes = namedNodes(embeddings[0]![1]!);
    expect(nodes.length).toBeGreaterThan(8);
    expect(nodes.filter((node) => !labels.has(node))).toEqual([]);
  });
});
