import { describe, expect, it } from 'vitest';
import * as api from '../../lambda/index';

describe('package root', () => {
  it('exports exactly the documented runtime names', () => {
    expect(Object.keys(api).sort()).toEqual([
      'DEAD_LETTER_ATTRIBUTES',
      'DEFAULT_METRIC_NAMESPACE',
      'ENTITY_FINGERPRINT_ATTRIBUTE',
      'ENV',
      'ERROR_CODES',
      'EffectivelyOnceError',
      'INBOX_ATTRIBUTES',
      'INBOX_STATUS',
      'MAX_BUSINESS_WRITES',
      'MAX_ITEM_BYTES',
      'MAX_TRANSACTION_BYTES',
      'METRICS',
      'METRIC_DIMENSION_CONSUMER',
      'PermanentError',
      'SCOPED_KEY_HASH_THRESHOLD_BYTES',
      'canonicalJson',
      'createBatchProcessor',
      'createDynamoDbStore',
      'createEmfMetricsSink',
      'createJsonLogger',
      'createSqsDeadLetterSender',
      'createSqsHandler',
      'createSqsMiddleware',
      'deriveEffectKeys',
      'dispositionOf',
      'estimateItemSize',
      'fingerprintOf',
      'fromAttribute',
      'fromBody',
      'fromCloudEvent',
      'fromDeduplicationId',
      'fromMessageId',
      'fromRecord',
      'isEffectivelyOnceError',
      'isValidName',
      'scopeKey',
      'sha256Hex',
      'toDedupKey',
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
