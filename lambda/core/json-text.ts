/**
 * Lossless JSON reading. `JSON.parse` turns every number into a double, so
 * `12345678901234567890` and `12345678901234567891` read the same; a fingerprint or a dedup
 * key computed from parsed values would then call two different payloads (or orders) the same.
 * This reader keeps each number as the literal the producer wrote, so fingerprints are computed
 * from what was sent and a key can be checked for lost precision.
 */

/** A JSON number as written in the text. */
export interface NumberLiteral {
  readonly literal: string;
}

/** A JSON value read losslessly: objects as maps (the last duplicate member wins, as in `JSON.parse`). */
export type JsonNode =
  | null
  | boolean
  | string
  | NumberLiteral
  | readonly JsonNode[]
  | ReadonlyMap<string, JsonNode>;

const WHITESPACE = /[ \t\n\r]*/y;
/** A string without escapes or control characters: its text is its value. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: a JSON string holds no raw U+0000 to U+001F, so they end the plain form
const PLAIN_STRING = /"([^"\\\x00-\x1f]*)"/y;
const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const LITERALS = [
  ['true', true],
  ['false', false],
  ['null', null],
] as const;

/**
 * Reads a JSON text, keeping number literals as written. Throws a `SyntaxError` (giving the
 * position, never quoting the text) where `JSON.parse` would throw.
 *
 * @example
 * readJson('{"id":12345678901234567890}'); // Map { 'id' => { literal: '12345678901234567890' } }
 */
export function readJson(text: string): JsonNode {
  /** The position of the next character. */
  let at = 0;

  const fail = (): never => {
    // The position only: the text may be a message body, which never reaches an error message.
    throw new SyntaxError(`Unexpected JSON at position ${at}`);
  };
  const skipWhitespace = (): void => {
    // Compact JSON has none: skip the regex unless a whitespace character is next.
    const code = text.charCodeAt(at);
    if (code !== 0x20 && code !== 0x0a && code !== 0x0d && code !== 0x09) return;
    WHITESPACE.lastIndex = at;
    WHITESPACE.exec(text);
    at = WHITESPACE.lastIndex;
  };
  /** Skips whitespace, then takes `char` if it is next. */
  const consume = (char: string): boolean => {
    skipWhitespace();
    if (text[at] !== char) return false;
    at++;
    return true;
  };
  const readString = (): string => {
    PLAIN_STRING.lastIndex = at;
    const plain = PLAIN_STRING.exec(text);
    if (plain !== null) {
      at = PLAIN_STRING.lastIndex;
      return plain[1]!;
    }
    const start = at;
    let index = start + 1;
    for (;;) {
      const char = text[index];
      if (char === undefined) fail();
      if (char === '"') break;
      index += char === '\\' ? 2 : 1;
    }
    at = index + 1;
    // Escapes, surrogates and control characters decoded (and checked) exactly as JSON.parse does.
    return JSON.parse(text.slice(start, at)) as string;
  };
  const readValue = (): JsonNode => {
    skipWhitespace();
    const char = text[at];
    if (char === '{') {
      at++;
      const members = new Map<string, JsonNode>();
      if (consume('}')) return members;
      do {
        skipWhitespace();
        if (text[at] !== '"') fail();
        const name = readString();
        if (!consume(':')) fail();
        members.set(name, readValue());
      } while (consume(','));
      if (!consume('}')) fail();
      return members;
    }
    if (char === '[') {
      at++;
      const items: JsonNode[] = [];
      if (consume(']')) return items;
      do items.push(readValue());
      while (consume(','));
      if (!consume(']')) fail();
      return items;
    }
    if (char === '"') return readString();
    const literal = LITERALS.find(([word]) => word[0] === char && text.startsWith(word, at));
    if (literal !== undefined) {
      at += literal[0].length;
      return literal[1];
    }
    NUMBER.lastIndex = at;
    const match = NUMBER.exec(text) ?? fail();
    at = NUMBER.lastIndex;
    return { literal: match[0] };
  };

  const value = readValue();
  skipWhitespace();
  if (at !== text.length) fail();
  return value;
}

/** True for a number node (the only plain object a {@link JsonNode} can be). */
export function isNumberLiteral(node: JsonNode | undefined): node is NumberLiteral {
  return typeof node === 'object' && node !== null && !Array.isArray(node) && !(node instanceof Map);
}

/** The node at `segments` (object member names), or `undefined` when there is none. */
export function nodeAt(root: JsonNode, segments: readonly string[]): JsonNode | undefined {
  let node: JsonNode | undefined = root;
  for (const segment of segments) {
    if (!(node instanceof Map)) return undefined;
    node = node.get(segment);
  }
  return node;
}

/** A decimal number as `<digits> × 10^power`, `digits` without leading or trailing zeros (`''` for zero). */
interface Decimal {
  readonly negative: boolean;
  readonly digits: string;
  readonly power: bigint;
}

const LITERAL_PARTS = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

function toDecimal(literal: string): Decimal {
  const parts = LITERAL_PARTS.exec(literal);
  if (parts === null) throw new SyntaxError('Not a JSON number literal');
  const [, sign, whole = '', fraction = '', exponent = '0'] = parts;
  // <whole><fraction> × 10^(exponent − fraction length), then trailing zeros moved into the power.
  const all = (whole + fraction).replace(/^0+/, '');
  const digits = all.replace(/0+$/, '');
  if (digits === '') return { negative: false, digits, power: 0n };
  return {
    negative: sign === '-',
    digits,
    // A bigint: an exponent can have more digits than a double carries.
    power: BigInt(exponent) + BigInt(all.length - digits.length - fraction.length),
  };
}

function sameDecimal(left: Decimal, right: Decimal): boolean {
  return left.negative === right.negative && left.digits === right.digits && left.power === right.power;
}

/**
 * True when parsing `literal` as a double loses nothing: the double's shortest form denotes the
 * literal's decimal value. `0.1`, `1.50` and `9007199254740992` are exact; `9007199254740993`
 * (which parses to `9007199254740992`) and `1e400` (`Infinity`) are not.
 */
export function isExactNumberLiteral(literal: string): boolean {
  const parsed = Number(literal);
  if (!Number.isFinite(parsed)) return false;
  const shortest = String(parsed);
  return shortest === literal || sameDecimal(toDecimal(literal), toDecimal(shortest));
}

/** Most digits {@link exactIntegerText} writes: a longer key is hashed anyway, and `1e999999` must not be expanded. */
export const MAX_INTEGER_TEXT_DIGITS = 1024;

/**
 * The decimal digits of the integer a literal denotes, every digit kept (`12345678901234567890`,
 * `4.2e1` → `42`, `-0` → `0`), or `undefined` for a literal that is not an integer or would have
 * more than {@link MAX_INTEGER_TEXT_DIGITS} digits.
 */
export function exactIntegerText(literal: string): string | undefined {
  const { negative, digits, power } = toDecimal(literal);
  if (digits === '') return '0';
  if (power < 0n || BigInt(digits.length) + power > BigInt(MAX_INTEGER_TEXT_DIGITS)) return undefined;
  return `${negative ? '-' : ''}${digits}${'0'.repeat(Number(power))}`;
}

/**
 * The canonical text of a number literal. An exact literal (see {@link isExactNumberLiteral}) is
 * written as `JSON.stringify` writes its double (`1.0`, `1e0` and `1` give `1`). Any other is
 * written as its significant digits and power of ten, `<digits>E<power>` (uppercase `E`, which
 * `JSON.stringify` never writes), so no digit is lost and no exact number reads the same.
 *
 * @example
 * canonicalNumber('1.50');                 // '1.5'
 * canonicalNumber('12345678901234567890'); // '1234567890123456789E1' (JSON.parse: 12345678901234567000)
 */
export function canonicalNumber(literal: string): string {
  // The common case: the literal is already what JSON.stringify writes for its double.
  if (String(Number(literal)) === literal) return literal;
  if (isExactNumberLiteral(literal)) return JSON.stringify(Number(literal));
  const { negative, digits, power } = toDecimal(literal);
  return `${negative ? '-' : ''}${digits}E${power}`;
}
