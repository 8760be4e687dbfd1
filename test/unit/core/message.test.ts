import { describe, expect, it } from 'vitest';
import { fromAttribute, fromBody, type KeySource } from '../../../lambda/core/dedup-key';
import { canonicalJson, fingerprintOf, sha256Hex } from '../../../lambda/core/fingerprint';
import { type BodyParser, type PrepareConfig, prepareMessage } from '../../../lambda/core/message';
import { sqsInboundMessage } from '../../../lambda/sqs/sqs-handler';
import { sqsRecord } from '../../support/fixtures';

function config<TBody>(
  dedupKey: KeySource<TBody>,
  overrides: Partial<PrepareConfig<TBody>> = {},
): PrepareConfig<TBody> {
  return {
    consumer: 'orders',
    dedupKey,
    parse: 'json' as BodyParser<TBody>,
    fingerprint: undefined,
    correlationId: undefined,
    ...overrides,
  };
}

const prepare = <TBody>(
  rawBody: string,
  source: KeySource<TBody>,
  overrides: Partial<PrepareConfig<TBody>> = {},
) => prepareMessage(sqsInboundMessage(sqsRecord('m-1', undefined, { rawBody })), config(source, overrides));

const INEXACT = 'The dedup key is a number that a double cannot hold exactly; send it as a string';

describe('prepareMessage: numbers', () => {
  it('keys a body path holding an integer beyond a double by every digit of its literal', () => {
    expect(prepare('{"orderId":12345678901234567890}', fromBody('orderId'))).toMatchObject({
      ok: true,
      message: { dedupKey: '12345678901234567890', scopedKey: 'orders#12345678901234567890' },
    });
    expect(prepare('{"order":{"id":12345678901234567891}}', fromBody('order.id'))).toMatchObject({
      ok: true,
      message: { dedupKey: '12345678901234567891' },
    });
    // Ordinary numbers key as before.
    expect(prepare('{"orderId":42.0}', fromBody('orderId'))).toMatchObject({ message: { dedupKey: '42' } });
    expect(prepare('{"orderId":1.5}', fromBody('orderId'))).toMatchObject({ message: { dedupKey: '1.5' } });
  });

  it('rejects a body path holding a fraction a double rounds as INVALID_KEY, never quoting it', () => {
    for (const body of ['{"orderId":0.10000000000000000000001}', '{"orderId":1.00000000000000000001}']) {
      expect(prepare(body, fromBody('orderId'))).toMatchObject({
        ok: false,
        error: { code: 'INVALID_KEY', message: INEXACT },
      });
    }
  });

  it('rejects an integer beyond Number.MAX_SAFE_INTEGER from a function or a custom parse as INVALID_KEY', () => {
    const body = '{"orderId":12345678901234567890}';
    expect(
      prepare(
        body,
        fromBody((order: { orderId: number }) => order.orderId),
      ),
    ).toMatchObject({
      ok: false,
      error: { code: 'INVALID_KEY', message: INEXACT },
    });
    expect(prepare(body, fromBody('orderId'), { parse: (text) => JSON.parse(text) })).toMatchObject({
      ok: false,
      error: {
        code: 'INVALID_KEY',
        message:
          'The dedup key (body field `orderId`) is a number that a double cannot hold exactly; send it as a string',
      },
    });
  });

  it('fingerprints the body text losslessly: a large amount changed beyond a double is another payload', () => {
    const first = prepare('{"orderId":"o-1","amount":12345678901234567890}', fromBody('orderId'));
    const changed = prepare('{"orderId":"o-1","amount":12345678901234567891}', fromBody('orderId'));
    const reordered = prepare('{ "amount": 12345678901234567890, "orderId": "o-1" }', fromBody('orderId'));
    expect(first).toMatchObject({
      ok: true,
      fingerprint: sha256Hex('{"amount":1234567890123456789E1,"orderId":"o-1"}'),
    });
    expect(changed).toMatchObject({
      ok: true,
      fingerprint: sha256Hex('{"amount":12345678901234567891E0,"orderId":"o-1"}'),
    });
    expect(reordered).toMatchObject({ fingerprint: (first as { fingerprint: string }).fingerprint });
  });

  it('keeps the fingerprint of an ordinary payload: the SHA-256 of the canonical JSON of its parsed value', () => {
    const body = '{ "orderId": "o-1", "amount": 1.50, "lines": [1.0, 2] }';
    expect(prepare(body, fromBody('orderId'))).toMatchObject({
      fingerprint: fingerprintOf(JSON.parse(body)),
    });
    expect(
      prepareMessage(
        sqsInboundMessage(sqsRecord('m-1', undefined, { rawBody: body, attributes: { k: 'k-1' } })),
        config(fromAttribute('k'), { parse: 'text' }),
      ),
    ).toMatchObject({ ok: true, fingerprint: sha256Hex(canonicalJson(JSON.parse(body))) });
    expect(
      prepareMessage(
        sqsInboundMessage(sqsRecord('m-1', undefined, { rawBody: 'plain text', attributes: { k: 'k-1' } })),
        config(fromAttribute('k'), { parse: 'text' }),
      ),
    ).toMatchObject({ ok: true, fingerprint: fingerprintOf('plain text') });
  });

  it('hands a fingerprint picker the parsed values', () => {
    const picked: unknown[] = [];
    const prepared = prepare('{"orderId":"o-1","amount":12345678901234567890}', fromBody('orderId'), {
      fingerprint: (message) => {
        picked.push(message.body);
        return message.body;
      },
    });
    expect(picked).toEqual([{ orderId: 'o-1', amount: 12345678901234567000 }]);
    expect(prepared).toMatchObject({
      fingerprint: fingerprintOf({ orderId: 'o-1', amount: 12345678901234567000 }),
    });
  });
});

describe('prepareMessage: keys', () => {
  it('rejects a lone surrogate in a body key or an attribute key as INVALID_KEY, keeping the correlation id', () => {
    expect(prepare('{"orderId":"o-\\ud800"}', fromBody('orderId'))).toEqual({
      ok: false,
      error: expect.objectContaining({ code: 'INVALID_KEY' }),
      correlationId: 'm-1',
      dedupKey: undefined,
      scopedKey: undefined,
    });
    const record = sqsRecord('m-2', {}, { attributes: { k: 'k-\udc00' } });
    expect(prepareMessage(sqsInboundMessage(record), config(fromAttribute('k')))).toMatchObject({
      ok: false,
      error: { code: 'INVALID_KEY' },
    });
  });

  it('rejects a body path holding an array as INVALID_KEY', () => {
    expect(prepare('{"ids":["a","b"]}', fromBody('ids'))).toMatchObject({
      ok: false,
      error: { code: 'INVALID_KEY' },
    });
  });
});
