/**
 * Dedup key sources of the Kafka entry point: the record's key (`fromKafkaKey`) or one of its
 * headers (`fromHeader`), as a producer sets them; a field of the value is `fromData`.
 */
import { describedKeySource } from '../core/dedup-key';
import { EffectivelyOnceError, expectOption } from '../core/errors';
import { utf8TextOf } from '../streams/stream-dead-letter';
import type { StreamKeySource } from '../streams/stream-handler';
import { type KafkaSourceRecord, kafkaHeaders } from './kafka-handler';

/** How a key's bytes become the dedup key. */
export interface KafkaKeyOptions {
  /**
   * `utf-8`: the bytes as text; bytes that are not UTF-8 are a permanent `INVALID_KEY` (two
   * different binary keys must never read as one). `base64`: the bytes in base64, for binary
   * keys (a serialized Avro or Protobuf key).
   * @default 'utf-8'
   */
  readonly encoding?: 'utf-8' | 'base64';
}

function encodingOf(options: KafkaKeyOptions | undefined): 'utf-8' | 'base64' {
  const encoding = options?.encoding ?? 'utf-8';
  expectOption(encoding === 'utf-8' || encoding === 'base64', 'encoding', "'utf-8' or 'base64'", encoding);
  return encoding;
}

/** The key text of `bytes` in `encoding`; `what` names them in the error of bytes that are not UTF-8. */
function keyText(bytes: Uint8Array, encoding: 'utf-8' | 'base64', what: string): string {
  if (encoding === 'base64') return Buffer.from(bytes).toString('base64');
  const text = utf8TextOf(bytes);
  if (text === undefined) {
    throw new EffectivelyOnceError(
      'INVALID_KEY',
      `${what} is not UTF-8 text; read a binary key with { encoding: 'base64' }`,
    );
  }
  return text;
}

/**
 * The key is the Kafka record's key, as text (or base64, see {@link KafkaKeyOptions}). A record
 * without a key (or with an empty one) is a permanent `MISSING_KEY`. Use it where the producer's
 * key names the event, not only the entity: a key that names the entity (`order-1`) is the same
 * for every event of that order, and the second one would be a mismatch.
 *
 * @example
 * fromKafkaKey()
 * fromKafkaKey({ encoding: 'base64' })
 */
export function fromKafkaKey(options?: KafkaKeyOptions): StreamKeySource<KafkaSourceRecord> {
  const encoding = encodingOf(options);
  return describedKeySource((record: KafkaSourceRecord) => {
    if (typeof record.key !== 'string' || record.key === '') return undefined;
    return keyText(new Uint8Array(Buffer.from(record.key, 'base64')), encoding, 'The Kafka record key');
  }, 'Kafka record key');
}

/**
 * The key is the value of the record's header `name`, as text (or base64, see
 * {@link KafkaKeyOptions}); with the name repeated, the last one (as Kafka's `lastHeader`). A
 * record without it is a permanent `MISSING_KEY`.
 *
 * @example
 * fromHeader('idempotency-key')
 */
export function fromHeader(name: string, options?: KafkaKeyOptions): StreamKeySource<KafkaSourceRecord> {
  expectOption(typeof name === 'string' && name !== '', 'name', 'a header name', name);
  const encoding = encodingOf(options);
  return describedKeySource((record: KafkaSourceRecord) => {
    const header = kafkaHeaders(record)
      .filter((candidate) => candidate.name === name)
      .at(-1);
    if (header === undefined || header.value.byteLength === 0) return undefined;
    return keyText(header.value, encoding, `The Kafka header \`${name}\``);
  }, `Kafka header \`${name}\``);
}
