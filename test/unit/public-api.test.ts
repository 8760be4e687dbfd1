import { describe, expect, it } from 'vitest';
import * as api from '../../lambda/index';

describe('package root', () => {
  it('exports exactly the documented runtime names', () => {
    expect(Object.keys(api).sort()).toEqual([
      'DEAD_LETTER_ATTRIBUTES',
      'DEAD_LETTER_MODES',
      'DEFAULT_METRIC_NAMESPACE',
      'ENTITY_FINGERPRINT_ATTRIBUTE',
      'ENV',
      'ERROR_CODES',
      'EffectivelyOnceError',
      'IDEMPOTENCY_KEY_HEADER',
      'INBOX_ATTRIBUTES',
      'INBOX_STATUS',
      'LOG_LEVELS',
      'MAX_BUSINESS_WRITES',
      'MAX_ITEM_BYTES',
      'MAX_TRANSACTION_BYTES',
      'METRICS',
      'METRIC_DIMENSION_CONSUMER',
      'METRIC_DIMENSION_MESSAGE_GROUP',
      'MIDDLEWARE_CLEANUP_PREFIX',
      'OMITTED_HEADER',
      'OUTBOX_DESTINATION_KINDS',
      'PermanentError',
      'REPLAYED_HEADER',
      'SCOPED_KEY_HASH_THRESHOLD_BYTES',
      'atomic',
      'canonicalJson',
      'createBatchProcessor',
      'createDynamoDbEntityStore',
      'createDynamoDbStore',
      'createEmfMetricsSink',
      'createIdempotentHttpHandler',
      'createJobGuard',
      'createJsonLogger',
      'createPowertoolsLogger',
      'createPowertoolsMetricsSink',
      'createSqsBatchHandler',
      'createSqsDeadLetterSender',
      'createSqsHandler',
      'createSqsMiddleware',
      'deriveEffectKeys',
      'dispositionOf',
      'entity',
      'estimateItemSize',
      'fingerprintOf',
      'fromAttribute',
      'fromBody',
      'fromCloudEvent',
      'fromDeduplicationId',
      'fromMessageId',
      'fromOutboxEnvelope',
      'fromRecord',
      'isEffectivelyOnceError',
      'isReplayableStatus',
      'isValidName',
      'jobSlotKey',
      'marker',
      'scheduledEventSlot',
      'scopeKey',
      'sha256Hex',
      'toDedupKey',
      'toScheduleSlot',
      'twoPhase',
    ]);
  });

  it('recognises toolkit errors by code, so a second copy of the package still matches', () => {
    const foreign = { name: 'EffectivelyOnceError', code: 'THROTTLED', message: 'slow down' };
    expect(api.isEffectivelyOnceError(foreign)).toBe(true);
    expect(api.dispositionOf(foreign)).toBe('retry');
    expect(api.dispositionOf(new api.PermanentError('no'))).toBe('permanent');
    expect(api.dispositionOf(new Error('plain'))).toBe('retry');
    expect(api.isEffectivelyOnceError({ code: 'ECONNRESET' })).toBe(false);
    expect(new api.PermanentError('no')).toMatchObject({
      name: 'PermanentError',
      code: 'PERMANENT',
      disposition: 'permanent',
    });
  });
});
