import { describe, expect, it } from 'vitest';
import {
  assertCommitWithinLimits,
  assertEntityWithinLimits,
  assertItemMarkerCommitWithinLimits,
  estimateItemSize,
  estimateValueSize,
  estimateWriteSize,
  MAX_ITEM_BYTES,
} from '../../../lambda/core/item-size';
import type { InboxRecord, TransactWriteAction } from '../../../lambda/core/store-port';

const record: InboxRecord = { pk: 'c#k', status: 'COMPLETED', fingerprint: 'f', expiresAt: 1, consumer: 'c' };
const put = (size: number, table = 'Orders'): TransactWriteAction => ({
  Put: { TableName: table, Item: { pk: 'x', blob: 'b'.repeat(size) } },
});

describe('item size estimation', () => {
  it('counts attribute names and values per the DynamoDB sizing rules', () => {
    expect(estimateValueSize('héllo')).toBe(6);
    expect(estimateValueSize(12345)).toBe(4); // 5 digits: ceil(5 / 2) + 1
    expect(estimateValueSize(10n ** 40n)).toBe(21);
    expect(estimateValueSize(true)).toBe(1);
    expect(estimateValueSize(null)).toBe(1);
    expect(estimateValueSize(undefined)).toBe(0);
    expect(estimateValueSize(new Uint8Array(10))).toBe(10);
    expect(estimateValueSize(new Set(['ab', 'c']))).toBe(3);
    expect(estimateValueSize(['a', 'b'])).toBe(3 + 2 + 2);
    expect(estimateValueSize({ a: 'x' })).toBe(3 + 1 + 1 + 1);
    expect(estimateValueSize(Symbol('s'))).toBe(0);
    expect(estimateItemSize({ pk: 'abc', skipped: undefined })).toBe(5);
  });

  it('estimates an update, delete or condition check by its key and expression values', () => {
    expect(
      estimateWriteSize({
        Update: {
          TableName: 't',
          Key: { pk: 'a' },
          UpdateExpression: 'SET v = :v',
          ExpressionAttributeValues: { ':v': 'xy' },
        },
      }),
    ).toBe(3 + 4);
    expect(estimateWriteSize({ Delete: { TableName: 't', Key: { pk: 'a' } } })).toBe(3);
    expect(estimateWriteSize({})).toBe(0);
  });
});

describe('commit limits', () => {
  it('accepts 99 business writes and rejects the 100th as TOO_MANY_WRITES', () => {
    expect(() =>
      assertCommitWithinLimits(
        record,
        Array.from({ length: 99 }, () => put(10)),
      ),
    ).not.toThrow();
    expect(() =>
      assertCommitWithinLimits(
        record,
        Array.from({ length: 100 }, () => put(10)),
      ),
    ).toThrow(
      expect.objectContaining({
        code: 'TOO_MANY_WRITES',
        message: 'A commit holds at most 99 business writes next to the marker, got 100',
      }),
    );
  });

  it('rejects a write above 400 KB as ITEM_TOO_LARGE, naming its index and table', () => {
    expect(() => assertCommitWithinLimits(record, [put(10), put(MAX_ITEM_BYTES)])).toThrow(
      expect.objectContaining({
        code: 'ITEM_TOO_LARGE',
        message:
          'Write 1 (Put on `Orders`) is about 409607 bytes; DynamoDB items are limited to 409600 bytes',
      }),
    );
  });

  it('rejects a commit above 4 MB in total as TRANSACTION_TOO_LARGE', () => {
    const writes = Array.from({ length: 11 }, () => put(400_000));
    expect(() => assertCommitWithinLimits(record, writes)).toThrow(
      expect.objectContaining({ code: 'TRANSACTION_TOO_LARGE' }),
    );
  });

  it('rejects an entity item that its fingerprint attribute pushes over 400 KB', () => {
    const entity = (size: number) => ({
      tableName: 'Audit',
      keyAttribute: 'pk',
      item: { pk: 'a', blob: 'b'.repeat(size) },
    });
    const fingerprint = 'f'.repeat(64);
    const overhead = 'pk'.length + 1 + 'blob'.length + 'eoFingerprint'.length + 64;
    expect(() => assertEntityWithinLimits(entity(MAX_ITEM_BYTES - overhead), fingerprint)).not.toThrow();
    expect(() => assertEntityWithinLimits(entity(MAX_ITEM_BYTES - overhead + 1), fingerprint)).toThrow(
      expect.objectContaining({ code: 'ITEM_TOO_LARGE' }),
    );
  });
});

describe('commit limits with the marker on a business item', () => {
  const fingerprint = 'f'.repeat(64);
  /** The put's item size in bytes: `pk` + `x` + `blob` + the blob. */
  const overhead = 'pk'.length + 1 + 'blob'.length;
  const marker = 'eoFingerprint'.length + 64;

  it('accepts 100 writes (no inbox record beside them) and rejects the 101st as TOO_MANY_WRITES', () => {
    const writes = (count: number) => Array.from({ length: count }, () => put(10));
    expect(() => assertItemMarkerCommitWithinLimits(writes(100), 0, fingerprint)).not.toThrow();
    expect(() => assertItemMarkerCommitWithinLimits(writes(101), 0, fingerprint)).toThrow(
      expect.objectContaining({
        code: 'TOO_MANY_WRITES',
        message: 'A commit with the marker on a business item holds at most 100 writes, got 101',
      }),
    );
  });

  it('counts the fingerprint attribute on the marked put only', () => {
    const fits = put(MAX_ITEM_BYTES - overhead - marker);
    const tight = put(MAX_ITEM_BYTES - overhead - marker + 1);
    expect(() => assertItemMarkerCommitWithinLimits([tight, fits], 1, fingerprint)).not.toThrow();
    expect(() => assertItemMarkerCommitWithinLimits([fits, tight], 1, fingerprint)).toThrow(
      expect.objectContaining({
        code: 'ITEM_TOO_LARGE',
        message:
          'Write 1 (Put on `Orders`) is about 409601 bytes; DynamoDB items are limited to 409600 bytes',
      }),
    );
  });

  it('rejects a commit above 4 MB in total as TRANSACTION_TOO_LARGE', () => {
    const writes = Array.from({ length: 11 }, () => put(400_000));
    expect(() => assertItemMarkerCommitWithinLimits(writes, 0, fingerprint)).toThrow(
      expect.objectContaining({ code: 'TRANSACTION_TOO_LARGE' }),
    );
  });
});
