/**
 * Payload fingerprints: SHA-256 (hex) of a canonical JSON form, so the same logical payload
 * always hashes the same whatever the producer's key order or whitespace.
 */
import { createHash } from 'node:crypto';

/** SHA-256 of the UTF-8 bytes of `text`, lowercase hex. */
export function sha256Hex(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
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

/** The fingerprint of any value: `sha256Hex(canonicalJson(value))`. */
export function fingerprintOf(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
