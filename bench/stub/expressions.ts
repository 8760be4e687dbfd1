/**
 * The one DynamoDB expression interpreter of the test doubles: the benchmark's DynamoDB stub
 * (`dynamodb-stub.ts`, on wire-form items) and the in-memory store of the unit tests
 * (`test/support/memory-store.ts`, on document-form items, through `evaluateDocumentCondition`
 * and `applyDocumentUpdate`).
 *
 * The subset of the language the store and the benchmarked implementations send: comparisons
 * (`=`, `<>`, `<`, `<=`, `>`, `>=`), `attribute_exists`, `attribute_not_exists`, `begins_with`,
 * `AND`, `OR`, `NOT`, parentheses; `SET a = v` (with `+`/`-` and `if_not_exists`) and
 * `REMOVE a`. Top-level attribute paths only. Placeholders resolve through the request's
 * `ExpressionAttributeNames` and `ExpressionAttributeValues`, as DynamoDB resolves them.
 *
 * Two kinds of failure, so a test never passes on a request the double did not understand:
 * - what DynamoDB itself rejects (an undefined or unused placeholder, an operand of the wrong
 *   type, `SET` from an absent attribute) throws `ExpressionValidationError`, which the doubles
 *   answer as DynamoDB does (a `ValidationException`);
 * - syntax this interpreter does not implement throws a plain `Error`.
 *
 * Comparisons follow DynamoDB: values of different types, or an absent attribute, compare false
 * under every comparator, `<>` included.
 */
import { marshall, unmarshall } from '@aws-sdk/util-dynamodb';

/** A DynamoDB attribute value in wire form (`{ S: 'x' }`, `{ N: '1' }`, ...). */
export type AttributeValue = Readonly<Record<string, unknown>>;

/** An item in wire form. */
export type Item = Readonly<Record<string, AttributeValue>>;

/** The placeholders an expression refers to: a request's names and values. */
export interface ExpressionContext {
  readonly names?: Readonly<Record<string, string>> | undefined;
  readonly values?: Readonly<Record<string, AttributeValue>> | undefined;
}

/** An item, or a request's values, in document form (`{ pk: 'x', n: 1 }`). */
export type Document = Readonly<Record<string, unknown>>;

/** The placeholders of a document-form request: its names, and its values as documents. */
export interface DocumentContext {
  readonly names?: Readonly<Record<string, string>> | undefined;
  readonly values?: Document | undefined;
}

/** A request DynamoDB rejects with a `ValidationException`; the message says why. */
export class ExpressionValidationError extends Error {
  override readonly name = 'ExpressionValidationError';
}

type Token =
  /** An attribute name (`#placeholder` or a bare name), or a keyword or function name. */
  | { readonly kind: 'name'; readonly text: string }
  /** A `:placeholder`. */
  | { readonly kind: 'value'; readonly text: string }
  | { readonly kind: 'op'; readonly text: string };

const TOKEN = /\s*(<>|<=|>=|[=<>(),+-]|[#:]?[A-Za-z0-9_]+)/y;

function tokenize(expression: string): Token[] {
  const tokens: Token[] = [];
  TOKEN.lastIndex = 0;
  while (TOKEN.lastIndex < expression.length) {
    const start = TOKEN.lastIndex;
    const match = TOKEN.exec(expression);
    if (!match) {
      if (expression.slice(start).trim() === '') break;
      throw new Error(`DynamoDB expression: unsupported syntax at ${start} in \`${expression}\``);
    }
    const text = match[1]!;
    if (text.startsWith(':')) tokens.push({ kind: 'value', text });
    else if (/^[#A-Za-z0-9_]/.test(text)) tokens.push({ kind: 'name', text });
    else tokens.push({ kind: 'op', text });
  }
  return tokens;
}

/** The functions the interpreter implements, by their (case-sensitive) DynamoDB names. */
const FUNCTIONS = new Set(['attribute_exists', 'attribute_not_exists', 'begins_with', 'if_not_exists']);

class Parser {
  private index = 0;
  private readonly tokens: readonly Token[];

  constructor(
    private readonly expression: string,
    private readonly context: ExpressionContext,
  ) {
    this.tokens = tokenize(expression);
  }

  get done(): boolean {
    return this.index >= this.tokens.length;
  }

  peek(): Token | undefined {
    return this.tokens[this.index];
  }

  /** True when the next token is the keyword `word` (keywords are case-insensitive). */
  isKeyword(word: string): boolean {
    const token = this.peek();
    return token?.kind === 'name' && token.text.toUpperCase() === word;
  }

  /** True when the next tokens call the function `name`. */
  isFunction(name: string): boolean {
    return this.peek()?.text === name && this.tokens[this.index + 1]?.text === '(';
  }

  next(): Token {
    const token = this.tokens[this.index++];
    if (!token) throw new Error(`DynamoDB expression: unexpected end of \`${this.expression}\``);
    return token;
  }

  expect(text: string): void {
    const token = this.next();
    if (token.text !== text) {
      throw new Error(
        `DynamoDB expression: expected \`${text}\`, got \`${token.text}\` in \`${this.expression}\``,
      );
    }
  }

  /** An attribute name, resolving `#placeholders`. */
  attributeName(): string {
    const token = this.next();
    if (token.kind !== 'name') {
      throw new Error(
        `DynamoDB expression: expected an attribute, got \`${token.text}\` in \`${this.expression}\``,
      );
    }
    if (this.tokens[this.index]?.text === '(' && !FUNCTIONS.has(token.text)) {
      throw new Error(
        `DynamoDB expression: unsupported function \`${token.text}\` in \`${this.expression}\``,
      );
    }
    if (!token.text.startsWith('#')) return token.text;
    const names = this.context.names;
    if (!names || !Object.hasOwn(names, token.text)) {
      throw new ExpressionValidationError(
        `DynamoDB expression: undefined name placeholder ${token.text} in \`${this.expression}\``,
      );
    }
    return names[token.text]!;
  }

  /** An operand: a `:value`, `if_not_exists(a, v)`, or an attribute read from `item` (`undefined` when absent). */
  operand(item: Item | undefined): AttributeValue | undefined {
    const token = this.peek();
    if (token?.kind === 'value') {
      this.next();
      const values = this.context.values;
      if (!values || !Object.hasOwn(values, token.text)) {
        throw new ExpressionValidationError(
          `DynamoDB expression: undefined value placeholder ${token.text} in \`${this.expression}\``,
        );
      }
      return values[token.text];
    }
    if (this.isFunction('if_not_exists')) {
      this.next();
      this.expect('(');
      const name = this.attributeName();
      const existing = item?.[name];
      this.expect(',');
      const fallback = this.operand(item);
      this.expect(')');
      return existing ?? fallback;
    }
    // Read the name first: `item?.[...]` would skip the token when there is no item.
    const name = this.attributeName();
    return item?.[name];
  }

  /** Fails on anything left over. */
  end(): void {
    if (!this.done) {
      throw new Error(`DynamoDB expression: unexpected \`${this.peek()?.text}\` in \`${this.expression}\``);
    }
  }
}

function numberOf(value: AttributeValue | undefined): number | undefined {
  return typeof value?.N === 'string' ? Number(value.N) : undefined;
}

/** Orders two values of the same scalar type; `undefined` when they are not comparable. */
export function compareValues(
  a: AttributeValue | undefined,
  b: AttributeValue | undefined,
): number | undefined {
  if (a === undefined || b === undefined) return undefined;
  const [x, y] = [numberOf(a), numberOf(b)];
  if (x !== undefined && y !== undefined) return x === y ? 0 : x < y ? -1 : 1;
  if (typeof a.S === 'string' && typeof b.S === 'string') return a.S === b.S ? 0 : a.S < b.S ? -1 : 1;
  if (typeof a.BOOL === 'boolean' && typeof b.BOOL === 'boolean') return a.BOOL === b.BOOL ? 0 : undefined;
  return JSON.stringify(a) === JSON.stringify(b) ? 0 : undefined;
}

function condition(parser: Parser, item: Item | undefined): boolean {
  let result = conjunction(parser, item);
  while (parser.isKeyword('OR')) {
    parser.next();
    const right = conjunction(parser, item);
    result = result || right;
  }
  return result;
}

function conjunction(parser: Parser, item: Item | undefined): boolean {
  let result = negation(parser, item);
  while (parser.isKeyword('AND')) {
    parser.next();
    const right = negation(parser, item);
    result = result && right;
  }
  return result;
}

function negation(parser: Parser, item: Item | undefined): boolean {
  if (parser.isKeyword('NOT')) {
    parser.next();
    return !negation(parser, item);
  }
  return primary(parser, item);
}

function primary(parser: Parser, item: Item | undefined): boolean {
  if (parser.peek()?.text === '(') {
    parser.next();
    const result = condition(parser, item);
    parser.expect(')');
    return result;
  }
  for (const name of ['attribute_exists', 'attribute_not_exists'] as const) {
    if (parser.isFunction(name)) {
      parser.next();
      parser.expect('(');
      const attribute = parser.attributeName();
      const present = item?.[attribute] !== undefined;
      parser.expect(')');
      return name === 'attribute_exists' ? present : !present;
    }
  }
  if (parser.isFunction('begins_with')) {
    parser.next();
    parser.expect('(');
    const value = parser.operand(item);
    parser.expect(',');
    const prefix = parser.operand(item);
    parser.expect(')');
    return typeof value?.S === 'string' && typeof prefix?.S === 'string' && value.S.startsWith(prefix.S);
  }
  const left = parser.operand(item);
  const operator = parser.next();
  if (operator.kind !== 'op')
    throw new Error(`DynamoDB expression: unsupported comparator \`${operator.text}\``);
  const right = parser.operand(item);
  const order = compareValues(left, right);
  switch (operator.text) {
    case '=':
      return order === 0;
    case '<>':
      return left !== undefined && right !== undefined && order !== 0;
    case '<':
      return order !== undefined && order < 0;
    case '<=':
      return order !== undefined && order <= 0;
    case '>':
      return order !== undefined && order > 0;
    case '>=':
      return order !== undefined && order >= 0;
    default:
      throw new Error(`DynamoDB expression: unsupported comparator \`${operator.text}\``);
  }
}

/**
 * Evaluates a condition expression against `item` (`undefined`: no item with that key). No
 * expression is a condition that holds.
 *
 * @example
 * evaluateCondition('attribute_not_exists(#pk)', undefined, { names: { '#pk': 'pk' } }); // true
 */
export function evaluateCondition(
  expression: string | undefined,
  item: Item | undefined,
  context: ExpressionContext,
): boolean {
  if (expression === undefined || expression.trim() === '') return true;
  const parser = new Parser(expression, context);
  const result = condition(parser, item);
  parser.end();
  return result;
}

function arithmetic(left: AttributeValue | undefined, operator: string, right: AttributeValue | undefined) {
  const [x, y] = [numberOf(left), numberOf(right)];
  if (x === undefined || y === undefined) {
    throw new ExpressionValidationError(
      'DynamoDB expression: an operand in the update expression has an incorrect data type',
    );
  }
  return { N: String(operator === '+' ? x + y : x - y) };
}

/**
 * Applies an update expression (`SET`, `REMOVE` clauses) to `item`, returning the new item.
 * `key` is merged in, so an update of an absent item creates it. Every operand reads the item
 * as it was before the update.
 */
export function applyUpdate(
  expression: string,
  item: Item | undefined,
  key: Item,
  context: ExpressionContext,
): Item {
  const parser = new Parser(expression, context);
  const next: Record<string, AttributeValue> = { ...item, ...key };
  while (!parser.done) {
    const clause = parser.next().text.toUpperCase();
    if (clause === 'SET') {
      do {
        if (parser.peek()?.text === ',') parser.next();
        const name = parser.attributeName();
        parser.expect('=');
        let value = parser.operand(item);
        const operator = parser.peek()?.text;
        if (operator === '+' || operator === '-') {
          parser.next();
          value = arithmetic(value, operator, parser.operand(item));
        }
        if (value === undefined) {
          throw new ExpressionValidationError(
            `DynamoDB expression: SET ${name} refers to an attribute that does not exist in the item`,
          );
        }
        next[name] = value;
      } while (parser.peek()?.text === ',');
    } else if (clause === 'REMOVE') {
      do {
        if (parser.peek()?.text === ',') parser.next();
        delete next[parser.attributeName()];
      } while (parser.peek()?.text === ',');
    } else {
      throw new Error(`DynamoDB expression: unsupported update clause \`${clause}\` in \`${expression}\``);
    }
  }
  return next;
}

/** Every `#name` or `:value` placeholder the texts use. */
function placeholdersIn(texts: readonly (string | undefined)[], sigil: '#' | ':'): Set<string> {
  const pattern = sigil === '#' ? /#[A-Za-z0-9_]+/g : /:[A-Za-z0-9_]+/g;
  return new Set(texts.flatMap((text) => text?.match(pattern) ?? []));
}

/**
 * Fails as DynamoDB does when a request carries a name or value placeholder that none of its
 * expressions (condition, update, ...) uses. Undefined placeholders fail where they are read.
 */
export function checkUnusedPlaceholders(
  expressions: readonly (string | undefined)[],
  context: { readonly names?: object | undefined; readonly values?: object | undefined },
): void {
  for (const [sigil, entries, what] of [
    ['#', context.names, 'ExpressionAttributeNames'],
    [':', context.values, 'ExpressionAttributeValues'],
  ] as const) {
    const used = placeholdersIn(expressions, sigil);
    const unused = Object.keys(entries ?? {}).filter((placeholder) => !used.has(placeholder));
    if (unused.length > 0) {
      throw new ExpressionValidationError(`DynamoDB expression: unused ${what}: ${unused.join(', ')}`);
    }
  }
}

/*
 * Document form: the in-memory store keeps plain JavaScript items, as the document client
 * shows them. They are marshalled to wire form for the interpreter, so both doubles answer with
 * the same semantics (typed comparisons, absent attributes).
 */

const MARSHALL_OPTIONS = { removeUndefinedValues: true, convertEmptyValues: false } as const;

function toWire(document: Document | undefined): Item | undefined {
  return document === undefined ? undefined : (marshall(document, MARSHALL_OPTIONS) as unknown as Item);
}

function documentContext(context: DocumentContext): ExpressionContext {
  return { names: context.names, values: toWire(context.values) };
}

/**
 * `evaluateCondition` on a document-form item and values.
 *
 * @example
 * evaluateDocumentCondition('#n > :zero', { pk: 'a', n: 1 }, { names: { '#n': 'n' }, values: { ':zero': 0 } }); // true
 */
export function evaluateDocumentCondition(
  expression: string | undefined,
  item: Document | undefined,
  context: DocumentContext,
): boolean {
  return evaluateCondition(expression, toWire(item), documentContext(context));
}

/** `applyUpdate` on a document-form item, key and values; the new item in document form. */
export function applyDocumentUpdate(
  expression: string,
  item: Document | undefined,
  key: Document,
  context: DocumentContext,
): Record<string, unknown> {
  // biome-ignore lint/suspicious/noExplicitAny: unmarshall's parameter type is the raw AttributeValue map.
  return unmarshall(applyUpdate(expression, toWire(item), toWire(key)!, documentContext(context)) as any);
}
