/**
 * The subset of DynamoDB's condition and update expression language that the benchmarked
 * implementations send: comparisons, `attribute_exists`, `attribute_not_exists`,
 * `begins_with`, `AND`, `OR`, `NOT`, parentheses; `SET a = v` (with `+`/`-` and
 * `if_not_exists`) and `REMOVE a`. Top-level attribute paths only. Anything else throws, so
 * the stub never silently answers a request it does not understand.
 */

/** A DynamoDB attribute value in wire form (`{ S: 'x' }`, `{ N: '1' }`, ...). */
export type AttributeValue = Readonly<Record<string, unknown>>;

/** An item in wire form. */
export type Item = Readonly<Record<string, AttributeValue>>;

/** The placeholders an expression refers to. */
export interface ExpressionContext {
  readonly names?: Readonly<Record<string, string>> | undefined;
  readonly values?: Readonly<Record<string, AttributeValue>> | undefined;
}

type Token =
  | { readonly kind: 'name'; readonly text: string }
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
      throw new Error(`Unsupported expression syntax at ${start}: ${expression}`);
    }
    const text = match[1]!;
    if (text.startsWith(':')) tokens.push({ kind: 'value', text });
    else if (/^[#A-Za-z0-9_]/.test(text)) tokens.push({ kind: 'name', text });
    else tokens.push({ kind: 'op', text });
  }
  return tokens;
}

class Parser {
  private index = 0;
  constructor(
    private readonly tokens: readonly Token[],
    private readonly context: ExpressionContext,
  ) {}

  get done(): boolean {
    return this.index >= this.tokens.length;
  }

  peek(): Token | undefined {
    return this.tokens[this.index];
  }

  isKeyword(word: string): boolean {
    const token = this.peek();
    return token?.kind === 'name' && token.text.toUpperCase() === word;
  }

  next(): Token {
    const token = this.tokens[this.index++];
    if (!token) throw new Error('Unexpected end of expression');
    return token;
  }

  expect(text: string): void {
    const token = this.next();
    if (token.text !== text) throw new Error(`Expected \`${text}\`, got \`${token.text}\``);
  }

  /** An attribute name, resolving `#placeholders`. */
  attributeName(): string {
    const token = this.next();
    if (token.kind !== 'name') throw new Error(`Expected an attribute name, got \`${token.text}\``);
    if (!token.text.startsWith('#')) return token.text;
    const name = this.context.names?.[token.text];
    if (name === undefined) throw new Error(`Undefined attribute name placeholder ${token.text}`);
    return name;
  }

  /** An operand: a `:value`, or an attribute path read from `item` (undefined when absent). */
  operand(item: Item | undefined): AttributeValue | undefined {
    const token = this.peek();
    if (token?.kind === 'value') {
      this.next();
      const value = this.context.values?.[token.text];
      if (value === undefined) throw new Error(`Undefined attribute value placeholder ${token.text}`);
      return value;
    }
    if (this.isKeyword('IF_NOT_EXISTS')) {
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
  const token = parser.peek();
  if (token?.text === '(') {
    parser.next();
    const result = condition(parser, item);
    parser.expect(')');
    return result;
  }
  for (const name of ['ATTRIBUTE_EXISTS', 'ATTRIBUTE_NOT_EXISTS'] as const) {
    if (parser.isKeyword(name)) {
      parser.next();
      parser.expect('(');
      const attribute = parser.attributeName();
      const present = item?.[attribute] !== undefined;
      parser.expect(')');
      return name === 'ATTRIBUTE_EXISTS' ? present : !present;
    }
  }
  if (parser.isKeyword('BEGINS_WITH')) {
    parser.next();
    parser.expect('(');
    const value = parser.operand(item);
    parser.expect(',');
    const prefix = parser.operand(item);
    parser.expect(')');
    return typeof value?.S === 'string' && typeof prefix?.S === 'string' && value.S.startsWith(prefix.S);
  }
  const left = parser.operand(item);
  const operator = parser.next().text;
  const right = parser.operand(item);
  const order = compareValues(left, right);
  switch (operator) {
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
      throw new Error(`Unsupported comparator \`${operator}\``);
  }
}

/**
 * Evaluates a condition expression against `item` (`undefined`: no item with that key).
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
  const parser = new Parser(tokenize(expression), context);
  const result = condition(parser, item);
  if (!parser.done) throw new Error(`Unexpected \`${parser.peek()?.text}\` in ${expression}`);
  return result;
}

function arithmetic(left: AttributeValue | undefined, operator: string, right: AttributeValue | undefined) {
  const [x, y] = [numberOf(left), numberOf(right)];
  if (x === undefined || y === undefined) throw new Error('An operand of + or - is not a number');
  return { N: String(operator === '+' ? x + y : x - y) };
}

/**
 * Applies an update expression (`SET`, `REMOVE` clauses) to `item`, returning the new item.
 * `key` is merged in, so an update of an absent item creates it.
 */
export function applyUpdate(
  expression: string,
  item: Item | undefined,
  key: Item,
  context: ExpressionContext,
): Item {
  const parser = new Parser(tokenize(expression), context);
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
        if (value === undefined) throw new Error(`SET ${name}: the operand refers to an absent attribute`);
        next[name] = value;
      } while (parser.peek()?.text === ',');
    } else if (clause === 'REMOVE') {
      do {
        if (parser.peek()?.text === ',') parser.next();
        delete next[parser.attributeName()];
      } while (parser.peek()?.text === ',');
    } else {
      throw new Error(`Unsupported update clause \`${clause}\``);
    }
  }
  return next;
}
