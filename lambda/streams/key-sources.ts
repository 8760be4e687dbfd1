/**
 * Dedup key sources of the stream entry points: a field of the decoded data (`fromData`), and
 * for DynamoDB Streams the item's key plus its version (`fromKeysAndVersion`).
 */
import { fromBody, type KeyPart, type KeyValue } from '../core/dedup-key';
import { EffectivelyOnceError, expectOption } from '../core/errors';
import type { AttributeValue, DynamoDbStreamRecord } from './stream-event';
import type { StreamKeySource } from './stream-handler';

/**
 * The key is a field of the record's parsed body: a Kinesis record's decoded data, or a DynamoDB
 * change (`{ eventName, keys, newImage, oldImage }`, see `createDynamoDbStreamHandler`). The
 * same rules as `fromBody`: a dotted path (`'order.id'`), a list of path segments, or a typed
 * function that may return a list of parts (a composite natural key). A number at a path keeps
 * every digit of its literal in the data.
 *
 * @example
 * fromData('eventId')
 * fromData((order: OrderEvent) => [order.orderId, order.status])
 */
export function fromData<TBody>(pick: (body: TBody) => KeyValue): StreamKeySource<unknown, TBody>;
/** The key is the data field at a dotted path (`'order.id'`) or a list of path segments. */
export function fromData(path: string | readonly string[]): StreamKeySource<unknown>;
export function fromData<TBody>(
  pathOrPick: string | readonly string[] | ((body: TBody) => KeyValue),
): StreamKeySource<unknown, TBody> {
  // `fromBody` ignores the record, so its source serves any record type; the stream handler
  // keeps it as it is (by its body path), so number keys are read losslessly.
  const source =
    typeof pathOrPick === 'function'
      ? fromBody<TBody>(pathOrPick)
      : fromBody(pathOrPick as string | string[]);
  return source as unknown as StreamKeySource<unknown, TBody>;
}

/** The text of a key attribute or version: a string, a number's exact literal, or base64 binary. */
function scalarText(value: AttributeValue | undefined): KeyPart | undefined {
  if (value === undefined || value === null || typeof value !== 'object') return undefined;
  if ('S' in value) return value.S;
  if ('N' in value) return value.N;
  if ('B' in value) return value.B;
  throw new EffectivelyOnceError(
    'INVALID_KEY',
    'A key part of the change must be a string, number or binary',
  );
}

/**
 * The key of a DynamoDB change: the item's key attributes (by name, in name order), the event
 * name and the item's `versionAttribute` (from the new image, or the old image of a `REMOVE`).
 * The same change delivered twice (a retry, a shard re-read) has the same key and payload, a
 * duplicate; never the event id alone, which a second emission of the same change does not keep.
 * The version must change with every write of the item (a counter kept across a delete and
 * re-create, or a timestamp); a change without it is a permanent `MISSING_KEY` (with a
 * `KEYS_ONLY` stream, or a `REMOVE` on a `NEW_IMAGE` stream).
 *
 * @example
 * fromKeysAndVersion('version') // key 'order-1:MODIFY:3' for pk 'order-1', version 3
 */
export function fromKeysAndVersion(versionAttribute: string): StreamKeySource<DynamoDbStreamRecord> {
  expectOption(
    typeof versionAttribute === 'string' && versionAttribute !== '',
    'versionAttribute',
    'an attribute name',
    versionAttribute,
  );
  return (record) => {
    const change = record.dynamodb;
    const keys = change?.Keys ?? {};
    const names = Object.keys(keys).sort();
    if (names.length === 0) return undefined;
    const image = record.eventName === 'REMOVE' ? change.OldImage : change.NewImage;
    return [
      ...names.map((name) => scalarText(keys[name])),
      record.eventName,
      scalarText(image?.[versionAttribute]),
    ];
  };
}
