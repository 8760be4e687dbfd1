/**
 * The Powertools adapters with the real packages: Powertools Logger as the `logger` (its JSON
 * lines captured from standard output) and Powertools Metrics as the metrics sink (its Embedded
 * Metric Format line captured after the flush).
 */
import { Logger } from '@aws-lambda-powertools/logger';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createPowertoolsLogger, createPowertoolsMetricsSink, METRICS } from '../../../lambda';
import { createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import { captureStdout, outcomeHandlerOptions, sqsEvent, sqsRecord, T0 } from '../../support/fixtures';

const context = { awsRequestId: 'req-1', getRemainingTimeInMillis: () => 60_000 };
const batch = sqsEvent(
  sqsRecord('m-1', { id: 'o-1' }),
  sqsRecord('m-2', { id: 'o-1' }),
  sqsRecord('m-3', { id: 'o-3', outcome: 'permanent' }),
);

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('createPowertoolsLogger', () => {
  it('writes each log entry through the Powertools Logger at its level, its fields as keys and no body', async () => {
    vi.stubEnv('POWERTOOLS_DEV', '');
    const powertools = new Logger({ serviceName: 'orders', logLevel: 'DEBUG' });
    const handler = createSqsHandler(
      outcomeHandlerOptions({ logger: createPowertoolsLogger(powertools), logLevel: 'info' }),
    );

    // Powertools writes warn and error lines to standard error; Lambda sends both streams to the logs.
    const errors: string[] = [];
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => {
      errors.push(String(chunk));
      return true;
    });
    const { result, lines: stdout } = await captureStdout(() => handler(batch, context)).finally(() =>
      stderr.mockRestore(),
    );
    const lines = [...stdout, ...errors.map((line) => JSON.parse(line) as Record<string, unknown>)];

    expect(result).toEqual({ batchItemFailures: [{ itemIdentifier: 'm-3' }] });
    expect(
      lines.map(({ timestamp, sampling_rate, ...line }) => {
        expect(typeof timestamp).toBe('string');
        return line;
      }),
    ).toEqual([
      {
        level: 'INFO',
        message: 'Duplicate message acknowledged',
        service: 'orders',
        consumer: 'orders',
        requestId: 'req-1',
        scopedKey: 'orders#o-1',
        messageId: 'm-2',
        correlationId: 'm-2',
        outcome: 'duplicate',
      },
      {
        level: 'ERROR',
        message: 'Message failed permanently',
        service: 'orders',
        consumer: 'orders',
        requestId: 'req-1',
        scopedKey: 'orders#o-3',
        messageId: 'm-3',
        correlationId: 'm-3',
        outcome: 'permanent',
        code: 'PERMANENT',
        errorName: 'PermanentError',
        reason: 'never',
        deadLetter: 'redrive',
      },
    ]);
    expect(JSON.stringify(lines)).not.toContain('"id"');
  });
});

describe('createPowertoolsMetricsSink', () => {
  it('adds every outcome count to the Powertools Metrics instance, written in its namespace when it flushes', async () => {
    vi.stubEnv('POWERTOOLS_DEV', '');
    const powertools = new Metrics({ namespace: 'Orders', serviceName: 'orders' });
    const handler = createSqsHandler(
      outcomeHandlerOptions({ metrics: createPowertoolsMetricsSink(powertools), clock: () => T0 }),
    );

    const before = await captureStdout(() => handler(batch, context));
    expect(before.lines).toEqual([]);
    const flushed = await captureStdout(async () => powertools.publishStoredMetrics());

    expect(flushed.lines).toHaveLength(1);
    const [emf] = flushed.lines as [Record<string, unknown>];
    expect(emf).toEqual({
      _aws: {
        Timestamp: expect.any(Number),
        CloudWatchMetrics: [
          {
            Namespace: 'Orders',
            Dimensions: [['service']],
            // The metric names are the toolkit's own (pinned with the EMF sink's line in the batch processor test).
            Metrics: Object.values(METRICS).map((Name) => ({ Name, Unit: 'Count' })),
          },
        ],
      },
      service: 'orders',
      Processed: 1,
      Duplicate: 1,
      InFlight: 0,
      Mismatch: 0,
      Stale: 0,
      Retry: 0,
      Permanent: 1,
      Takeover: 0,
      CacheHit: 0,
    });
  });
});
