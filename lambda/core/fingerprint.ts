/**
 * Payload fingerprints: SHA-256 (hex) of a canonical JSON form, so the same logical payload
 * always hashes the same whatever the producer's key order or whitespace.
 */
import { createHash } from 'node:crypto';
import { canonicalNumber, isNumberLiteral, type JsonNode, readJson } from './json-text';

/**
 * SHA-256 of `text`, lowercase hex. Well-formed text is hashed as its UTF-8 bytes. A lone
 * surrogate has no UTF-8 form (the encoder would write U+FFFD for every one of them, so texts
 * differing only in lone surrogates would hash the same): text holding one is hashed as the byte
 * `0xFF` (which no UTF-8 text contains) followed by its UTF-16 code units, so it is distinct
 * from every other text.
 */
export function sha256Hex(text: string): string {
  const hash = createHash('sha256');
  if (isWellFormedText(text)) return hash.update(text, 'utf8').digest('hex');
  return hash.update(ILL_FORMED_TEXT_MARK).update(text, 'utf16le').digest('hex');
}

const ILL_FORMED_TEXT_MARK = Buffer.from([0xff]);

/**
 * SHA-256 of `bytes`, lowercase hex: the fingerprint of a body that is not text. A body that is
 * text is fingerprinted by its text (`sha256Hex` of its canonical form), never by this.
 */
export function sha256HexOfBytes(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

const LONE_SURROGATE = /\p{Surrogate}/u;

/** `String.prototype.isWellFormed` where the runtime has it (Node.js 20 and later). */
const nativeIsWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean }).isWellFormed;

/**
 * True unless `text` holds a lone surrogate (ill-formed UTF-16), as `String.prototype.isWellFormed`
 * answers (which the ES2022 library this package targets does not declare): the runtime's own
 * where it has one, several times faster than the expression on every message's fingerprint.
 */
export function isWellFormedText(text: string): boolean {
  if (nativeIsWellFormed !== undefined) return nativeIsWellFormed.call(text);
  // With the `u` flag a surrogate pair is one code point, so only a lone surrogate matches.
  return !LONE_SURROGATE.test(text);
}

/**
 * Canonical JSON: object keys sorted (by UTF-16 code units), no whitespace, `toJSON` honoured,
 * `undefined` members omitted (`null` inside arrays), as `JSON.stringify` would otherwise do.
 * Bigints are written as decimal strings. Throws a `TypeError` on cycles.
 *
 * @example
 * canonicalJson({ b: 1, a: [true, null] }); // '{"a":[true,null],"b":1}'
 */
export function canonicalJson(value: unknown): string {
  return write(value, []) ?? 'null';
}

/** `value` in canonical form; `path` holds the objects being written, to detect cycles. */
function write(value: unknown, path: object[]): string | undefined {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return JSON.stringify(value);
    case 'bigint':
      return `"${value}"`;
    case 'object':
      break;
    default:
      // undefined, functions and symbols have no JSON form
      return undefined;
  }
  const object = value as object & { toJSON?: () => unknown };
  if (typeof object.toJSON === 'function') return write(object.toJSON(), path);
  // A short stack of the enclosing objects: cheaper than a set at the depths payloads have.
  if (path.includes(object)) throw new TypeError('Cannot fingerprint a cyclic structure');
  path.push(object);
  let out: string;
  if (Array.isArray(object)) {
    out = '[';
    for (let index = 0; index < object.length; index++) {
      out += `${index === 0 ? '' : ','}${write(object[index], path) ?? 'null'}`;
    }
    out += ']';
  } else {
    out = '';
    for (const key of Object.keys(object).sort()) {
      const member = write((object as Record<string, unknown>)[key], path);
      if (member !== undefined) out += `,${JSON.stringify(key)}:${member}`;
    }
    out = `{${out.slice(1)}}`;
  }
  path.pop();
  return out;
}

/**
 * Canonical JSON of a JSON text, read losslessly: the same form {@link canonicalJson} gives for
 * `JSON.parse(text)` (keys sorted, no whitespace, the last of duplicate members), except that
 * each number keeps the decimal value it was written with (see `canonicalNumber`), so
 * `12345678901234567890` and `12345678901234567891` stay different. Numbers a double carries
 * exactly are written as `JSON.stringify` writes them (`1.0` → `1`), so ordinary payloads
 * canonicalise as their parsed values do. Throws a `SyntaxError` on text that is not JSON.
 *
 * @example
 * canonicalJsonText('{ "b": 1.0, "a": 12345678901234567890 }'); // '{"a":12345678901234567890,"b":1}'
 */
export function canonicalJsonText(text: string): string {
  return canonicalJsonOfNode(readJson(text));
}

/** {@link canonicalJsonText} of a text already read with `readJson`. */
export function canonicalJsonOfNode(node: JsonNode): string {
  if (node === null || typeof node === 'boolean' || typeof node === 'string') return JSON.stringify(node);
  if (isNumberLiteral(node)) return canonicalNumber(node.literal);
  if (Array.isArray(node)) return `[${node.map(canonicalJsonOfNode).join(',')}]`;
  const members = node as ReadonlyMap<string, JsonNode>;
  const names = [...members.keys()].sort();
  return `{${names.map((name) => `${JSON.stringify(name)}:${canonicalJsonOfNode(members.get(name)!)}`).join(',')}}`;
}

/**
 * A string literal (its escapes skipped) or a number literal of a JSON text: the only places a
 * digit can be in valid JSON. A number's characters are `-+.eE` and digits, and nothing else
 * valid in JSON continues one. A match that ends in a digit is a number (a string ends in `"`).
 */
const STRING_OR_NUMBER = /"(?:[^"\\]|\\.)*"|-?\d[\d.eE+-]*/g;

/** True for a character of a number literal: a digit or one of `.eE+-`. */
function isNumberCharacter(code: number): boolean {
  return (
    (code >= 0x30 && code <= 0x39) ||
    code === 0x2e ||
    code === 0x65 ||
    code === 0x45 ||
    code === 0x2b ||
    code === 0x2d
  );
}

/**
 * {@link canonicalJsonText} of `text`, given `parsed`, what `JSON.parse(text)` returned: the
 * same string, computed from the parsed value when that is the same thing (the usual case, about
 * a quarter of the cost of reading the text again). The two differ only in numbers: the lossless
 * form writes each literal as {@link canonicalNumber} does, `canonicalJson` writes the parsed
 * double. So every number literal of the text is checked to read the same both ways (a plain
 * literal such as `1000` or `12.5` is its own canonical form and its double's); one that does
 * not (`12345678901234567890`, `1.0e400`) sends the whole text to the lossless reader.
 *
 * `parsed` must come from `JSON.parse(text)`; anything else gives a wrong answer.
 */
export function canonicalJsonOfParsedText(text: string, parsed: unknown): string {
  STRING_OR_NUMBER.lastIndex = 0;
  // `test`, not `exec`: no match array for every string of the body. A number literal is found
  // back from its end (what precedes one in JSON, `[,:` or white space, is no number character).
  while (STRING_OR_NUMBER.test(text)) {
    const end = STRING_OR_NUMBER.lastIndex;
    if (text.charCodeAt(end - 1) === 0x22) continue;
    let start = end - 1;
    while (start > 0 && isNumberCharacter(text.charCodeAt(start - 1))) start--;
    const literal = text.slice(start, end);
    if (String(Number(literal)) === literal) continue;
    if (canonicalNumber(literal) !== JSON.stringify(Number(literal))) return canonicalJsonText(text);
  }
  return canonicalJsonOfParsed(parsed);
}

/** What {@link sortedCopy} returns for a value `JSON.stringify` cannot write in sorted order. */
const UNSORTABLE = Symbol('unsortable');

/**
 * {@link canonicalJson} of what `JSON.parse` returned (plain objects and arrays, strings, finite
 * numbers, booleans, null: no `toJSON`, bigint, `undefined` or cycle), written by `JSON.stringify`
 * from a copy whose members were added in sorted order: the same string, in about half the time
 * and with a fraction of the garbage of building it piece by piece. `JSON.stringify` writes an
 * object's members in the order they were added, except array-index names (`"0"`, `"10"`), which
 * come first in numeric order, and a copy cannot take a `__proto__` member by assignment: a value
 * with either (or one too deep for the copy) is written by `canonicalJson`.
 */
function canonicalJsonOfParsed(parsed: unknown): string {
  try {
    const sorted = sortedCopy(parsed);
    if (sorted !== UNSORTABLE) return JSON.stringify(sorted);
  } catch {
    // Too deep to copy or write here: `canonicalJson` answers as it always did.
  }
  return canonicalJson(parsed);
}

/** `value` with every object's members added in sorted order, or {@link UNSORTABLE}. */
function sortedCopy(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    const items: unknown[] = [];
    for (const item of value) {
      const copy = sortedCopy(item);
      if (copy === UNSORTABLE) return UNSORTABLE;
      items.push(copy);
    }
    return items;
  }
  const members: Record<string, unknown> = {};
  for (const name of sortedNames(Object.keys(value))) {
    // A name starting with a digit may be an array index; `__proto__` would set the prototype.
    const first = name.charCodeAt(0);
    if ((first >= 0x30 && first <= 0x39) || name === '__proto__') return UNSORTABLE;
    const copy = sortedCopy((value as Record<string, unknown>)[name]);
    if (copy === UNSORTABLE) return UNSORTABLE;
    members[name] = copy;
  }
  return members;
}

/** The fingerprint of any value: `sha256Hex(canonicalJson(value))`. */
export function fingerprintOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}

/** Lists up to this long are sorted by insertion, longer ones by `Array.prototype.sort`. */
const INSERTION_SORT_MAX = 16;

/**
 * `names` sorted in place as `names.sort()` sorts them (by UTF-16 code units). A body's objects
 * have a few members each, and `Array.prototype.sort` allocates about 900 bytes per call
 * whatever the length (V8's merge state), once per object of every message: a short list is
 * sorted by insertion instead.
 */
function sortedNames(names: string[]): string[] {
  if (names.length > INSERTION_SORT_MAX) return names.sort();
  for (let index = 1; index < names.length; index++) {
    const name = names[index]!;
    let at = index;
    for (; at > 0 && names[at - 1]! > name; at--) names[at] = names[at - 1]!;
    names[at] = name;
  }
  return names;
}
