/**
 * The record Lambda sends to a DynamoDB Streams event source's on-failure destination when it
 * gives up on a batch: metadata about the batch (`DDBStreamBatchInfo`), never its records. Pure.
 *
 * ```json
 * {
 *   "requestContext": { "condition": "RetryAttemptsExhausted", ... },
 *   "DDBStreamBatchInfo": {
 *     "shardId": "shardId-00000001573689847184-864758bb",
 *     "startSequenceNumber": "800000000003126276362",
 *     "endSequenceNumber": "800000000003126276362",
 *     "approximateArrivalOfFirstRecord": "2019-11-14T00:13:19Z",
 *     "approximateArrivalOfLastRecord": "2019-11-14T00:13:19Z",
 *     "batchSize": 1,
 *     "streamArn": "arn:aws:dynamodb:us-east-2:123456789012:table/mytable/stream/2019-11-14T00:04:06.388"
 *   }
 * }
 * ```
 */

/** The batch an on-failure record describes. */
export interface StreamBatchInfo {
  readonly shardId: string;
  readonly startSequenceNumber: string;
  readonly endSequenceNumber: string;
  /** `approximateArrivalOfFirstRecord`, epoch milliseconds. */
  readonly firstArrivalMillis: number;
  /** `approximateArrivalOfLastRecord`, epoch milliseconds. */
  readonly lastArrivalMillis: number;
  readonly batchSize: number;
  readonly streamArn: string;
  /** `requestContext.condition` (`RetryAttemptsExhausted`, `RecordAgeExceeded`, ...), when given. */
  readonly condition?: string;
}

/** An on-failure record read from its message body, or why it is not one. */
export type OnFailureRecord =
  | { readonly kind: 'batch'; readonly batch: StreamBatchInfo }
  | { readonly kind: 'invalid'; readonly reason: string };

/**
 * Reads the body of an on-failure message. Never throws: a body that is not a DynamoDB Streams
 * on-failure record is `invalid` with the reason (the message is then left on the queue).
 */
export function parseOnFailureRecord(body: string | undefined): OnFailureRecord {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body ?? '');
  } catch {
    return invalid('the body is not JSON');
  }
  if (typeof parsed !== 'object' || parsed === null) return invalid('the body is not a JSON object');
  const record = parsed as Record<string, unknown>;
  const info = record.DDBStreamBatchInfo;
  if (typeof info !== 'object' || info === null) {
    return invalid(
      'KinesisBatchInfo' in record
        ? 'it describes a Kinesis batch, not a DynamoDB Streams one'
        : 'it has no `DDBStreamBatchInfo` object',
    );
  }
  const fields = info as Record<string, unknown>;
  const text = (name: string) =>
    typeof fields[name] === 'string' && fields[name] !== '' ? fields[name] : undefined;
  for (const name of ['shardId', 'startSequenceNumber', 'endSequenceNumber', 'streamArn']) {
    if (text(name) === undefined) return invalid(`\`DDBStreamBatchInfo.${name}\` is not a non-empty string`);
  }
  const arrivals: number[] = [];
  for (const name of ['approximateArrivalOfFirstRecord', 'approximateArrivalOfLastRecord']) {
    const millis = Date.parse(text(name) ?? '');
    if (Number.isNaN(millis)) return invalid(`\`DDBStreamBatchInfo.${name}\` is not a time`);
    arrivals.push(millis);
  }
  const [firstArrivalMillis, lastArrivalMillis] = arrivals as [number, number];
  if (lastArrivalMillis < firstArrivalMillis) {
    return invalid('`DDBStreamBatchInfo.approximateArrivalOfLastRecord` is before the first record');
  }
  const batchSize = fields.batchSize;
  if (typeof batchSize !== 'number' || !Number.isInteger(batchSize) || batchSize < 1) {
    return invalid('`DDBStreamBatchInfo.batchSize` is not a positive integer');
  }
  const condition = (record.requestContext as { condition?: unknown } | undefined)?.condition;
  return {
    kind: 'batch',
    batch: {
      shardId: text('shardId')!,
      startSequenceNumber: text('startSequenceNumber')!,
      endSequenceNumber: text('endSequenceNumber')!,
      firstArrivalMillis,
      lastArrivalMillis,
      batchSize,
      streamArn: text('streamArn')!,
      ...(typeof condition === 'string' ? { condition } : {}),
    },
  };
}

/**
 * The name of the table whose stream `streamArn` is
 * (`arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>`); `undefined` otherwise.
 */
export function tableOfStream(streamArn: string): string | undefined {
  return /^arn:[^:]+:dynamodb:[^:]*:[^:]*:table\/([^/]+)\/stream\/.+$/.exec(streamArn)?.[1];
}

function invalid(reason: string): OnFailureRecord {
  return { kind: 'invalid', reason };
}
