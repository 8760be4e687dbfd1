/**
 * Dedup key sources that read what only SQS delivers: the FIFO deduplication id, and any
 * function of the SQS record (`fromRecord`).
 */
import { DEDUPLICATION_ID_ATTRIBUTE } from '../core/contract';
import { attributeValue, describedKeySource, type KeySource } from '../core/dedup-key';
import type { SqsRecord } from './sqs-event';

/**
 * The key is the FIFO `MessageDeduplicationId` (the producer's id, or the body's SHA-256 with
 * content-based deduplication). Broker deduplication only covers five minutes; this key lets
 * the consumer cover the rest.
 *
 * A dead letter loses that id: SQS replaces it with the message id when it moves a message to a
 * FIFO dead-letter queue (`maxReceiveCount`), and the direct sender gives the dead letter its
 * source message id. So the message attribute `eo-deduplication-id`
 * (`DEDUPLICATION_ID_ATTRIBUTE`), which the direct sender (`deadLetter: 'direct'`)
 * sets to the original id, is preferred when present: a message redriven after a fix keeps its
 * key, and its completed effects are duplicates. After a native redrive (`deadLetter:
 * 'redrive'`) no attribute can be added: the deduplication id is no longer the original one (the
 * move to the dead-letter queue set it to the message id), so the key is new and completed
 * effects run again. Prefer a producer or business key (`fromBody`, `fromAttribute`) where
 * messages may be redriven.
 */
export function fromDeduplicationId(): KeySource<unknown, SqsRecord> {
  return describedKeySource(
    (record) =>
      attributeValue(record.messageAttributes, DEDUPLICATION_ID_ATTRIBUTE) ??
      record.attributes?.MessageDeduplicationId,
    `\`${DEDUPLICATION_ID_ATTRIBUTE}\` attribute, else the \`MessageDeduplicationId\``,
  );
}

/**
 * The key is any function of the SQS record and the parsed body (typed helper; a plain function
 * works too).
 *
 * @example
 * fromRecord((record, body: { id: string }) => [record.messageAttributes.tenant?.stringValue, body.id])
 */
export function fromRecord<TBody = unknown>(pick: KeySource<TBody, SqsRecord>): KeySource<TBody, SqsRecord> {
  return pick;
}
