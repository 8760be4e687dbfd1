import type { SQSClient } from '@aws-sdk/client-sqs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  applyConstructEnvironment,
  constructModeDefaults,
  defaultDocumentClient,
} from '../../../lambda/construct-environment';
import { fromBody } from '../../../lambda/core/dedup-key';
import { readConstructSettings } from '../../../lambda/core/environment';
import { PermanentError } from '../../../lambda/core/errors';
import type { Message } from '../../../lambda/core/message';
import { createSqsMiddleware } from '../../../lambda/middleware/sqs-middleware';
import { marker } from '../../../lambda/modes/marker';
import { type Effects, twoPhase } from '../../../lambda/modes/two-phase';
import { createSqsHandler, type SqsHandlerOptions } from '../../../lambda/sqs/sqs-handler';
import { createWorkerBatchHandler } from '../../../lambda/worker/batch-handler';
import { createSqsWorker } from '../../../lambda/worker/sqs-worker';
import { captureLogger, captureMetrics, sqsEvent, sqsRecord, T0 } from '../../support/fixtures';
import { createMemoryStore } from '../../support/memory-store';

/** The variables `IdempotentConsumer` sets on a function in direct dead-letter mode. */
const construct = {
  EO_CONSUMER: 'billing',
  EO_MODE: 'marker',
  EO_INBOX_TABLE: 'billing-inbox',
  EO_TTL_SECONDS: '86400',
  EO_DEAD_LETTER_MODE: 'direct',
  EO_DEAD_LETTER_QUEUE_URL: 'https://sqs.us-east-1.amazonaws.com/123456789012/billing-dlq',
  EO_LEASE_MILLIS: '30000',
  EO_METRIC_NAMESPACE: 'Shop',
  EO_LOG_LEVEL: 'debug',
  EO_COMPLETED_CACHE_MAX_ENTRIES: '500',
};
/** The part of an Embedded Metric Format line the test reads. */
interface EmfLine {
  readonly _aws: { readonly CloudWatchMetrics: readonly { readonly Namespace: string }[] };
  readonly Consumer: string;
}
const DLQ_URL = construct.EO_DEAD_LETTER_QUEUE_URL;
const context = { awsRequestId: 'req-1', getRemainingTimeInMillis: () => 60_000 };

interface Order {
  readonly id?: string;
  readonly bad?: boolean;
}

/** What a user writes in a function the construct deployed: the key, the mode, the handler. */
const minimal = {
  dedupKey: fromBody('id'),
  mode: marker((message: Message<Order>) => {
    if (message.body.bad) throw new PermanentError('never');
  }),
} as const;

afterEach(() => {
  vi.restoreAllMocks();
});

describe('readConstructSettings', () => {
  it('reads every EO_* variable the construct sets', () => {
    expect(readConstructSettings(construct)).toEqual({
      consumer: 'billing',
      mode: 'marker',
      tableName: 'billing-inbox',
      ttlSeconds: 86_400,
      deadLetter: 'direct',
      deadLetterQueueUrl: DLQ_URL,
      leaseMillis: 30_000,
      metricNamespace: 'Shop',
      logLevel: 'debug',
      completedCacheMaxEntries: 500,
    });
  });

  it('leaves unset and empty variables out', () => {
    expect(readConstructSettings({})).toEqual({});
    expect(
      readConstructSettings({ EO_CONSUMER: '', EO_TTL_SECONDS: ' ', EO_LOG_LEVEL: '', OTHER: 'x' }),
    ).toEqual({});
  });

  it('fails fast on a malformed variable, naming it and its value', () => {
    const cases: [Record<string, string>, string][] = [
      [{ EO_TTL_SECONDS: 'abc' }, 'Expected `EO_TTL_SECONDS` to be a positive integer, got `"abc"`'],
      [{ EO_TTL_SECONDS: '0' }, 'Expected `EO_TTL_SECONDS` to be a positive integer, got `"0"`'],
      [{ EO_TTL_SECONDS: '-5' }, 'Expected `EO_TTL_SECONDS` to be a positive integer, got `"-5"`'],
      [{ EO_LEASE_MILLIS: '1.5' }, 'Expected `EO_LEASE_MILLIS` to be a positive integer, got `"1.5"`'],
      [
        { EO_DEAD_LETTER_MODE: 'dlq' },
        "Expected `EO_DEAD_LETTER_MODE` to be one of 'redrive', 'direct', got `\"dlq\"`",
      ],
      [
        { EO_DEAD_LETTER_MODE: 'direct' },
        "Expected `EO_DEAD_LETTER_QUEUE_URL` to be a queue URL when `EO_DEAD_LETTER_MODE` is 'direct', got `undefined`",
      ],
      [
        { EO_DEAD_LETTER_QUEUE_URL: 'billing-dlq' },
        'Expected `EO_DEAD_LETTER_QUEUE_URL` to be a queue URL, got `"billing-dlq"`',
      ],
      [
        { EO_LOG_LEVEL: 'verbose' },
        "Expected `EO_LOG_LEVEL` to be one of 'debug', 'info', 'warn', 'error', 'silent', got `\"verbose\"`",
      ],
      [
        { EO_COMPLETED_CACHE_MAX_ENTRIES: '0' },
        'Expected `EO_COMPLETED_CACHE_MAX_ENTRIES` to be an integer from 1 to 10000, got `"0"`',
      ],
      [
        { EO_COMPLETED_CACHE_MAX_ENTRIES: '10001' },
        'Expected `EO_COMPLETED_CACHE_MAX_ENTRIES` to be an integer from 1 to 10000, got `"10001"`',
      ],
      [
        { EO_COMPLETED_CACHE_MAX_ENTRIES: 'lots' },
        'Expected `EO_COMPLETED_CACHE_MAX_ENTRIES` to be an integer from 1 to 10000, got `"lots"`',
      ],
      [
        { EO_MODE: 'twoPhase' },
        "Expected `EO_MODE` to be one of 'marker', 'atomic', 'entity', 'two-phase', got `\"twoPhase\"`",
      ],
      [
        { EO_CONSUMER: 'my consumer' },
        'Expected `EO_CONSUMER` to be a name matching /^[A-Za-z0-9._:-]{1,100}$/, got `"my consumer"`',
      ],
    ];
    for (const [environment, message] of cases) {
      expect(() => readConstructSettings(environment)).toThrow(
        expect.objectContaining({ code: 'INVALID_OPTIONS', message }),
      );
    }
  });
});

describe('applyConstructEnvironment', () => {
  it('fills every option the construct sets from its EO_* variables, with clients made once per cold start', () => {
    const resolved = applyConstructEnvironment<SqsHandlerOptions<Order>>(minimal, construct);
    const again = applyConstructEnvironment<SqsHandlerOptions<Order>>(minimal, construct);

    expect(resolved).toEqual({
      ...minimal,
      consumer: 'billing',
      tableName: 'billing-inbox',
      client: defaultDocumentClient(),
      ttlSeconds: 86_400,
      deadLetter: 'direct',
      deadLetterSender: expect.objectContaining({ send: expect.any(Function) }),
      metricNamespace: 'Shop',
      logLevel: 'debug',
      completedCache: { maxEntries: 500 },
    });
    expect(again.client).toBe(resolved.client);
    expect(again.deadLetterSender).toBe(resolved.deadLetterSender);
    expect(defaultDocumentClient().config.translateConfig?.marshallOptions).toEqual({
      removeUndefinedValues: true,
    });
  });

  it('gives the mode the construct lease as a default, and the options none', () => {
    expect(constructModeDefaults(construct)).toEqual({ leaseMillis: 30_000 });
    expect(constructModeDefaults({})).toEqual({});
    expect(applyConstructEnvironment<SqsHandlerOptions<Order>>(minimal, construct)).not.toHaveProperty(
      'leaseMillis',
    );
  });

  it('lets explicit options win over the construct', () => {
    const client = defaultDocumentClient();
    const sender = { send: async () => undefined };
    const explicit = applyConstructEnvironment<SqsHandlerOptions<Order>>(
      {
        ...minimal,
        consumer: 'billing',
        tableName: 'billing-inbox',
        ttlSeconds: 3600,
        deadLetter: 'redrive',
        metricNamespace: 'Mine',
        logLevel: 'warn',
        completedCache: { maxEntries: 20 },
      },
      construct,
    );
    const withSender = applyConstructEnvironment<SqsHandlerOptions<Order>>(
      { ...minimal, client, deadLetterSender: sender },
      construct,
    );

    expect(explicit).toMatchObject({
      ttlSeconds: 3600,
      deadLetter: 'redrive',
      deadLetterSender: undefined,
      metricNamespace: 'Mine',
      logLevel: 'warn',
      completedCache: { maxEntries: 20 },
    });
    expect(withSender).toMatchObject({ deadLetter: 'direct', deadLetterSender: sender, client });
  });

  it('creates no document client for a handler with its own store', () => {
    const store = createMemoryStore();

    expect(
      applyConstructEnvironment<SqsHandlerOptions<Order>>({ ...minimal, store }, construct).client,
    ).toBeUndefined();
  });

  it('fails the cold start on an explicit consumer or tableName other than the construct’s, naming both', () => {
    expect(() =>
      createSqsHandler<Order>({ ...minimal, consumer: 'payments', environment: construct }),
    ).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message:
          "Expected `consumer` to be `billing` as the construct set it (`EO_CONSUMER`), got `payments`: leave `consumer` out to use the construct's, or change the construct",
      }),
    );
    expect(() =>
      createSqsHandler<Order>({ ...minimal, tableName: 'other-inbox', environment: construct }),
    ).toThrow(
      expect.objectContaining({
        code: 'INVALID_OPTIONS',
        message:
          "Expected `tableName` to be `billing-inbox` as the construct set it (`EO_INBOX_TABLE`), got `other-inbox`: leave `tableName` out to use the construct's, or change the construct",
      }),
    );
  });

  it("fails the cold start of a handler whose mode is not the construct's (EO_MODE), naming both, in every entry point", () => {
    const atomicConstruct = { ...construct, EO_MODE: 'atomic' };
    const message =
      "The handler's mode is `marker`, but the construct deployed it as `atomic` (`EO_MODE`): its grants, alarms and record TTL are those of `atomic` mode. Use the same mode in the handler and the construct's `mode`";
    const store = createMemoryStore({ inboxTable: 'billing-inbox' });
    const mismatch = expect.objectContaining({ code: 'INVALID_OPTIONS', message });
    expect(() => createSqsHandler<Order>({ ...minimal, store, environment: atomicConstruct })).toThrow(
      mismatch,
    );
    expect(() => createSqsMiddleware<Order>({ ...minimal, store, environment: atomicConstruct })).toThrow(
      mismatch,
    );
    expect(() =>
      createWorkerBatchHandler<Order>(
        { ...minimal, store, environment: atomicConstruct },
        { sqs: { send: async () => ({}) } as unknown as SQSClient, queueUrl: DLQ_URL },
      ),
    ).toThrow(mismatch);
    // The construct's own mode, or none said (a function deployed without the construct), starts.
    expect(createSqsHandler<Order>({ ...minimal, store, environment: construct })).toEqual(
      expect.any(Function),
    );
    const { EO_MODE: _mode, ...withoutMode } = construct;
    expect(createSqsHandler<Order>({ ...minimal, store, environment: withoutMode })).toEqual(
      expect.any(Function),
    );
  });

  it('reads nothing from an empty environment: the consumer is then required', () => {
    expect(() =>
      createSqsHandler<Order>({ ...minimal, store: createMemoryStore(), environment: {} }),
    ).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', message: expect.stringContaining('`consumer`') }),
    );
  });
});

describe('entry points configured by the construct', () => {
  /** A handler over a memory store, with only what the user writes plus the test's probes. */
  function options(environment: Record<string, string>) {
    const store = createMemoryStore({ inboxTable: 'billing-inbox' });
    const logger = captureLogger();
    const metrics = captureMetrics();
    const sent: unknown[] = [];
    const deadLetterSender = { send: async (message: unknown) => void sent.push(message) };
    return {
      store,
      logger,
      metrics,
      sent,
      options: {
        ...minimal,
        store,
        clock: () => T0,
        logger,
        metrics,
        deadLetterSender,
        environment,
      } satisfies SqsHandlerOptions<Order>,
    };
  }

  it('createSqsHandler scopes keys by EO_CONSUMER, expires records after EO_TTL_SECONDS, logs at EO_LOG_LEVEL and dead-letters directly', async () => {
    const probe = options({ ...construct, EO_LOG_LEVEL: 'silent' });
    const handler = createSqsHandler(probe.options);

    expect(
      await handler(
        sqsEvent(sqsRecord('m-1', { id: 'o-1' }), sqsRecord('m-2', { id: 'o-2', bad: true })),
        context,
      ),
    ).toEqual({
      batchItemFailures: [],
    });
    expect(probe.store.read('billing-inbox', 'billing#o-1')).toMatchObject({
      consumer: 'billing',
      expiresAt: T0 / 1000 + 86_400,
    });
    expect(probe.sent).toEqual([
      expect.objectContaining({ consumer: 'billing', code: 'PERMANENT', sourceMessageId: 'm-2' }),
    ]);
    expect(probe.logger.entries).toEqual([]);
    expect(probe.metrics.published).toEqual([expect.objectContaining({ consumer: 'billing' })]);
  });

  it('publishes the default metrics under EO_METRIC_NAMESPACE', async () => {
    const lines: string[] = [];
    vi.spyOn(process.stdout, 'write').mockImplementation((line) => {
      lines.push(String(line));
      return true;
    });
    const probe = options(construct);
    const handler = createSqsHandler({ ...probe.options, metrics: undefined, logLevel: 'silent' });

    await handler(sqsEvent(sqsRecord('m-1', { id: 'o-1' })), context);

    const emf = lines.map((line) => JSON.parse(line) as EmfLine);
    expect(emf.map((line) => [line._aws.CloudWatchMetrics[0]?.Namespace, line.Consumer])).toEqual([
      ['Shop', 'billing'],
    ]);
  });

  it('createSqsHandler, the middleware and the worker answer a duplicate from the cache EO_COMPLETED_CACHE_MAX_ENTRIES turns on', async () => {
    const sqs = { send: vi.fn(async () => ({ Successful: [], Failed: [] })) } as unknown as SQSClient;
    const callsOnDuplicate: Record<string, number> = {};
    for (const entry of ['handler', 'middleware', 'worker'] as const) {
      const probe = options(construct);
      let run: (messageId: string) => Promise<unknown>;
      if (entry === 'handler') {
        const handler = createSqsHandler(probe.options);
        run = (messageId) => handler(sqsEvent(sqsRecord(messageId, { id: 'o-1' })), context);
      } else if (entry === 'middleware') {
        const middleware = createSqsMiddleware(probe.options);
        run = (messageId) =>
          middleware.before({ event: sqsEvent(sqsRecord(messageId, { id: 'o-1' })), context });
      } else {
        const handle = createWorkerBatchHandler(probe.options, { sqs, queueUrl: DLQ_URL });
        run = (messageId) =>
          handle([
            { MessageId: messageId, ReceiptHandle: `rh-${messageId}`, Body: '{"id":"o-1"}', Attributes: {} },
          ]);
      }
      await run('m-1');
      const before = probe.store.calls.length;
      await run('m-2');
      callsOnDuplicate[entry] = probe.store.calls.length - before;
      expect(probe.metrics.published[1]?.counts).toMatchObject({ duplicate: 1, cacheHit: 1 });
    }

    expect(callsOnDuplicate).toEqual({ handler: 0, middleware: 0, worker: 0 });
  });

  it('createSqsMiddleware takes the same settings from the environment', async () => {
    const probe = options(construct);
    const middleware = createSqsMiddleware(probe.options);

    await middleware.before({ event: sqsEvent(sqsRecord('m-1', { id: 'o-1' })), context });

    expect(probe.store.read('billing-inbox', 'billing#o-1')).toMatchObject({
      expiresAt: T0 / 1000 + 86_400,
    });
    expect(() => createSqsMiddleware({ ...probe.options, consumer: 'payments' })).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', message: expect.stringContaining('`payments`') }),
    );
  });

  it('the worker batch handler takes the same settings from the environment', async () => {
    const probe = options(construct);
    const sqs = { send: vi.fn(async () => ({ Successful: [], Failed: [] })) } as unknown as SQSClient;
    const handle = createWorkerBatchHandler(probe.options, {
      sqs,
      queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/billing',
    });

    const acknowledged = await handle([
      { MessageId: 'm-1', ReceiptHandle: 'rh-1', Body: JSON.stringify({ id: 'o-1' }), Attributes: {} },
    ]);

    expect(acknowledged.map((message) => message.MessageId)).toEqual(['m-1']);
    expect(probe.store.read('billing-inbox', 'billing#o-1')).toMatchObject({
      expiresAt: T0 / 1000 + 86_400,
    });
    expect(() =>
      createWorkerBatchHandler({ ...probe.options, tableName: 'other-inbox' }, { sqs, queueUrl: DLQ_URL }),
    ).toThrow(
      expect.objectContaining({ code: 'INVALID_OPTIONS', message: expect.stringContaining('`other-inbox`') }),
    );
  });

  /** A two-phase handler over `store` whose one effect records the lease end it was claimed with. */
  function twoPhaseHandler(
    store: ReturnType<typeof createMemoryStore>,
    leases: unknown[],
    leaseMillis?: number,
  ) {
    return {
      dedupKey: fromBody('id'),
      mode: twoPhase({
        leaseMillis,
        handle: (_message: Message<Order>, effects: Effects) =>
          effects.run('charge', () => {
            leases.push(...store.items('billing-inbox').map((item) => item.leaseExpiresAt));
          }),
      }),
      store,
      clock: () => T0,
      logLevel: 'silent',
      metrics: false,
      environment: { ...construct, EO_MODE: 'two-phase' },
    } satisfies SqsHandlerOptions<Order>;
  }

  it('createSqsHandler claims two-phase effects for EO_LEASE_MILLIS', async () => {
    const store = createMemoryStore({ inboxTable: 'billing-inbox' });
    const leases: unknown[] = [];
    const handler = createSqsHandler(twoPhaseHandler(store, leases));

    await handler(sqsEvent(sqsRecord('m-1', { id: 'o-1' })), context);

    expect(leases).toEqual([T0 + 30_000]);
  });

  it('lets the mode’s own leaseMillis win over EO_LEASE_MILLIS', async () => {
    const store = createMemoryStore({ inboxTable: 'billing-inbox' });
    const leases: unknown[] = [];
    const handler = createSqsHandler(twoPhaseHandler(store, leases, 5000));

    await handler(sqsEvent(sqsRecord('m-1', { id: 'o-1' })), context);

    expect(leases).toEqual([T0 + 5000]);
  });

  it('the worker claims for its visibility timeout rather than the Lambda lease in EO_LEASE_MILLIS', async () => {
    const store = createMemoryStore({ inboxTable: 'billing-inbox' });
    const leases: unknown[] = [];
    let receives = 0;
    const sqs = {
      send: async (command: { constructor: { name: string } }) => {
        if (command.constructor.name !== 'ReceiveMessageCommand') return {};
        receives += 1;
        if (receives > 1) return new Promise((resolve) => setImmediate(() => resolve({})));
        return {
          Messages: [{ MessageId: 'm-1', ReceiptHandle: 'rh-1', Body: '{"id":"o-1"}', Attributes: {} }],
        };
      },
    } as unknown as SQSClient;
    const worker = createSqsWorker(twoPhaseHandler(store, leases), {
      sqs,
      queueUrl: 'https://sqs.us-east-1.amazonaws.com/123456789012/billing',
      visibilityTimeoutSeconds: 45,
    });

    worker.start();
    await vi.waitFor(() => expect(leases).toHaveLength(1));
    await worker.stop();

    expect(leases).toEqual([T0 + 45_000]);
    expect(store.items('billing-inbox').map((item) => item.pk)).toEqual(['billing/charge#o-1']);
  });
});

describe('a fair queue’s per-group metrics from the construct', () => {
  it('reads EO_GROUP_METRICS_MAX_GROUPS, an integer from 1 to 1000', () => {
    expect(readConstructSettings({ EO_GROUP_METRICS_MAX_GROUPS: '100' })).toEqual({
      groupMetricsMaxGroups: 100,
    });
    for (const value of ['0', '1001', 'all']) {
      expect(() => readConstructSettings({ EO_GROUP_METRICS_MAX_GROUPS: value })).toThrow(
        `Expected \`EO_GROUP_METRICS_MAX_GROUPS\` to be an integer from 1 to 1000, got \`"${value}"\``,
      );
    }
  });

  it('fills groupMetrics from it, an explicit option winning', () => {
    const environment = { ...construct, EO_GROUP_METRICS_MAX_GROUPS: '100' };

    expect(applyConstructEnvironment<SqsHandlerOptions<Order>>(minimal, environment).groupMetrics).toEqual({
      maxGroups: 100,
    });
    expect(
      applyConstructEnvironment<SqsHandlerOptions<Order>>(
        { ...minimal, groupMetrics: { maxGroups: 5 } },
        environment,
      ).groupMetrics,
    ).toEqual({ maxGroups: 5 });
    expect(
      applyConstructEnvironment<SqsHandlerOptions<Order>>(minimal, construct).groupMetrics,
    ).toBeUndefined();
  });
});
