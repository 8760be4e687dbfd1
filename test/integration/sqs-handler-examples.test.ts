/**
 * The README's handler examples (`examples/sqs-*.ts`), imported as they are and run against the
 * real local AWS endpoint: the environment they read is set first, then each module is loaded
 * (creating its SDK clients at module scope, as in Lambda) and its handler invoked. Their
 * default logger and metrics write to standard output, which is captured and checked.
 * `sqs-two-phase.ts` calls a payments service played by a local HTTP server; `sqs-marker-mode.ts`
 * calls a CDN over the internet and is only type-checked.
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ReceiveMessageCommand } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { LambdaContext, SqsBatchResponse, SqsEvent, SqsRecord } from '../../lambda';
import { localAwsEnv } from '../../scripts/local-aws/harness';
import { uniqueName } from '../support/aws';
import { createLocalResources, lambdaContext, sqsRecord } from '../support/fixtures';

const local = createLocalResources();
const { aws, sqs } = local;
const run = randomBytes(3).toString('hex');

/** Tables the examples use, by the environment variable that names them, with their key schema. */
const tables = {
  EO_INBOX_TABLE: ['pk'],
  ORDERS_TABLE: ['pk', 'sk'],
  AUDIT_TABLE: ['pk'],
  INVOICES_TABLE: ['pk'],
  CUSTOMERS_TABLE: ['pk'],
  SHIPMENTS_TABLE: ['shipmentId'],
} as const;
const names = Object.fromEntries(
  Object.keys(tables).map((variable) => [variable, uniqueName(`eo-examples-${variable.toLowerCase()}`)]),
) as Record<keyof typeof tables, string>;
const savedEnv = { ...process.env };
let deadLetterQueueUrl = '';

/** What the local payments service received, and how it answers `/refunds` next. */
const payments = {
  requests: [] as { path: string; idempotencyKey: string; body: Record<string, unknown> }[],
  refundStatus: 200,
};
const paymentsServer: Server = createServer((request, response) => {
  let body = '';
  request.on('data', (chunk: Buffer) => {
    body += chunk.toString('utf8');
  });
  request.on('end', () => {
    const path = request.url ?? '';
    payments.requests.push({
      path,
      idempotencyKey: String(request.headers['idempotency-key']),
      body: JSON.parse(body) as Record<string, unknown>,
    });
    const status = path === '/refunds' ? payments.refundStatus : 200;
    response.writeHead(status, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify(status === 200 ? { refundReference: `ref-${payments.requests.length}` } : {}),
    );
  });
});

beforeAll(async () => {
  for (const [variable, keys] of Object.entries(tables)) {
    await local.createTable(names[variable as keyof typeof tables], keys);
  }
  await new Promise<void>((resolve) => paymentsServer.listen(0, '127.0.0.1', resolve));
  ({ url: deadLetterQueueUrl } = await local.createQueue('eo-examples-dlq'));
  // What the deployed function's environment holds; the examples' unconfigured SDK clients
  // then reach the local endpoint.
  Object.assign(process.env, names, {
    EO_DEAD_LETTER_QUEUE_URL: deadLetterQueueUrl,
    PAYMENTS_URL: `http://127.0.0.1:${(paymentsServer.address() as AddressInfo).port}`,
    ...localAwsEnv(aws),
  });
});

afterAll(async () => {
  process.env = savedEnv;
  await new Promise((resolve) => paymentsServer.close(resolve));
  await local.dispose();
});

const readItem = (variable: keyof typeof tables, key: Record<string, string>) =>
  local.readItem(names[variable], key);

/** A record of the examples' standard queue. */
const eventRecord = (body: unknown, attributes: Record<string, string> = {}): SqsRecord =>
  sqsRecord(randomUUID(), body, { attributes, queue: 'events' });

type Handler = (event: SqsEvent, context: LambdaContext) => Promise<SqsBatchResponse>;

/** Invokes `handler` and returns its response with the JSON lines it wrote to standard output. */
async function invoke(handler: Handler, ...records: SqsRecord[]) {
  const written: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation(((chunk: string | Uint8Array) => {
    written.push(String(chunk));
    return true;
  }) as never);
  try {
    const response = await handler({ Records: records }, lambdaContext());
    const lines = written
      .join('')
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    return {
      response,
      logs: lines.filter((line) => !('_aws' in line)),
      metrics: lines.filter((line) => '_aws' in line),
    };
  } finally {
    spy.mockRestore();
  }
}

/**
 * Loads an example that is deployed with the construct, with the consumer name the construct
 * gives it in `EO_CONSUMER` (read once, when the module creates its handler).
 */
async function loadAsDeployed<T>(consumer: string, load: () => Promise<T>): Promise<T> {
  vi.stubEnv('EO_CONSUMER', consumer);
  try {
    return await load();
  } finally {
    vi.unstubAllEnvs();
  }
}

describe('the README handler examples on the local endpoint', () => {
  it('sqs-order-projector.ts commits an order, acknowledges its replay and rejects a negative amount', async () => {
    const { handler } = await loadAsDeployed(
      'order-projector',
      () => import('../../examples/sqs-order-projector'),
    );
    const order = { orderId: `o-${run}`, status: 'PAID', amount: 1250 };
    const negative = eventRecord({ orderId: `o-${run}`, status: 'SHIPPED', amount: -1 });

    const first = await invoke(handler, eventRecord(order));
    const replay = await invoke(handler, eventRecord(order), negative);

    expect(first.response).toEqual({ batchItemFailures: [] });
    expect(replay.response).toEqual({ batchItemFailures: [{ itemIdentifier: negative.messageId }] });
    expect(await readItem('ORDERS_TABLE', { pk: `ORDER#o-${run}`, sk: 'ORDER' })).toEqual({
      pk: `ORDER#o-${run}`,
      sk: 'ORDER',
      status: 'PAID',
      amount: 1250,
    });
    expect(await readItem('ORDERS_TABLE', { pk: `ORDER#o-${run}`, sk: 'STATUS#PAID' })).toEqual({
      pk: `ORDER#o-${run}`,
      sk: 'STATUS#PAID',
      amount: 1250,
    });
    expect(replay.logs.map(({ level, outcome, code, reason }) => ({ level, outcome, code, reason }))).toEqual(
      expect.arrayContaining([
        { level: 'info', outcome: 'duplicate', code: undefined, reason: undefined },
        {
          level: 'error',
          outcome: 'permanent',
          code: 'PERMANENT',
          reason: 'An order amount cannot be negative',
        },
      ]),
    );
    expect(replay.metrics).toEqual([
      expect.objectContaining({ Consumer: 'order-projector', Processed: 0, Duplicate: 1, Permanent: 1 }),
    ]);
  });

  it('sqs-entity-mode.ts writes one audit item per CloudEvent, carrying the fingerprint', async () => {
    const { handler } = await import('../../examples/sqs-entity-mode');
    const event = {
      specversion: '1.0',
      id: `evt-${run}`,
      source: 'https://shop.example.com/orders',
      type: 'order.paid',
      data: { orderId: 'o-1' },
    };

    const first = await invoke(handler, eventRecord(event));
    const replay = await invoke(handler, eventRecord(event));

    expect([first.response, replay.response]).toEqual([{ batchItemFailures: [] }, { batchItemFailures: [] }]);
    const pk = `audit-recorder#https%3A//shop.example.com/orders:evt-${run}`;
    expect(await readItem('AUDIT_TABLE', { pk })).toEqual({
      pk,
      type: 'order.paid',
      data: { orderId: 'o-1' },
      eoFingerprint: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(replay.metrics).toEqual([expect.objectContaining({ Processed: 0, Duplicate: 1 })]);
  });

  it('sqs-middy.ts books an invoice and its customer balance once, however often it is delivered', async () => {
    const { handler } = await import('../../examples/sqs-middy');
    const invoice = { invoiceId: `inv-${run}`, customerId: `cust-${run}`, total: 40 };

    const responses = [];
    for (let delivery = 0; delivery < 3; delivery += 1) {
      responses.push((await invoke(handler as unknown as Handler, eventRecord(invoice))).response);
    }

    expect(responses).toEqual([1, 2, 3].map(() => ({ batchItemFailures: [] })));
    expect(await readItem('INVOICES_TABLE', { pk: `inv-${run}` })).toEqual({
      pk: `inv-${run}`,
      customerId: `cust-${run}`,
      total: 40,
    });
    expect(await readItem('CUSTOMERS_TABLE', { pk: `cust-${run}` })).toEqual({
      pk: `cust-${run}`,
      balance: 40,
    });
  });

  it('sqs-dead-letter-direct.ts sends a reused shipment id with another carrier to the dead-letter queue', async () => {
    const { handler } = await import('../../examples/sqs-dead-letter-direct');
    const shipment = { shipmentId: `s-${run}`, carrier: 'DHL' };
    const reused = eventRecord({ ...shipment, carrier: 'UPS' });

    await invoke(handler, eventRecord(shipment));
    const { response, logs } = await invoke(handler, reused);

    expect(response).toEqual({ batchItemFailures: [] });
    expect(logs).toEqual([
      expect.objectContaining({ outcome: 'mismatch', code: 'PAYLOAD_MISMATCH', deadLetter: 'sent' }),
    ]);
    const { Messages = [] } = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: deadLetterQueueUrl,
        WaitTimeSeconds: 1,
        MessageAttributeNames: ['All'],
      }),
    );
    expect(
      Messages.map(({ Body, MessageAttributes }) => [Body, MessageAttributes?.['eo-code']?.StringValue]),
    ).toEqual([[reused.body, 'PAYLOAD_MISMATCH']]);
    expect(await readItem('SHIPMENTS_TABLE', { shipmentId: `s-${run}` })).toMatchObject({ carrier: 'DHL' });
  });

  it('sqs-two-phase.ts refunds once through a failing and a working call with one idempotency key, and calls nothing on a duplicate', async () => {
    const { handler } = await loadAsDeployed('refunds', () => import('../../examples/sqs-two-phase'));
    const request = { refundId: `r-${run}`, paymentId: `p-${run}`, amount: 500 };
    const first = eventRecord(request);
    const keyOf = (effect: string) => createHash('sha256').update(`refunds/${effect}#r-${run}`).digest('hex');

    payments.refundStatus = 503;
    const failed = await invoke(handler, first);
    payments.refundStatus = 200;
    const retried = await invoke(handler, first);
    const duplicate = await invoke(handler, first);

    expect([failed.response, retried.response, duplicate.response]).toEqual([
      { batchItemFailures: [{ itemIdentifier: first.messageId }] },
      { batchItemFailures: [] },
      { batchItemFailures: [] },
    ]);
    expect(failed.logs).toEqual([
      expect.objectContaining({
        outcome: 'retry',
        code: 'HANDLER_FAILED',
        errorName: 'Error',
        // Its message is not logged by default (`logErrorMessages`): it could quote data.
        reason: 'Error thrown; its message is not logged',
      }),
    ]);
    expect(payments.requests).toEqual([
      { path: '/refunds', idempotencyKey: keyOf('refund'), body: request },
      { path: '/refunds', idempotencyKey: keyOf('refund'), body: request },
      {
        path: '/notifications',
        idempotencyKey: keyOf('notify'),
        body: { paymentId: `p-${run}`, reference: 'ref-2' },
      },
    ]);
    expect(duplicate.metrics).toEqual([expect.objectContaining({ Processed: 0, Duplicate: 1 })]);
  });

  it('sqs-observability.ts logs the hashed key and the correlation id, and publishes to its namespace', async () => {
    const { handler } = await import('../../examples/sqs-observability');
    const eventId = `evt-${run}`;
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';

    const first = await invoke(handler, eventRecord({ eventId }, { traceparent }));
    const reused = eventRecord({ eventId, extra: true }, { traceparent });
    const second = await invoke(handler, reused);

    expect(first.logs).toEqual([]); // `warn`: a processed message logs nothing
    expect(second.response).toEqual({ batchItemFailures: [{ itemIdentifier: reused.messageId }] });
    expect(second.logs).toEqual([
      {
        level: 'error',
        message: 'Dedup key reused with a different payload',
        consumer: 'search-indexer',
        requestId: expect.any(String),
        scopedKeyHash: createHash('sha256').update(`search-indexer#${eventId}`).digest('hex'),
        messageId: reused.messageId,
        correlationId: traceparent,
        outcome: 'mismatch',
        code: 'PAYLOAD_MISMATCH',
        reason: expect.stringContaining('different payload'),
        deadLetter: 'redrive',
      },
    ]);
    expect(second.metrics).toEqual([
      expect.objectContaining({
        _aws: expect.objectContaining({
          CloudWatchMetrics: [expect.objectContaining({ Namespace: 'Search', Dimensions: [['Consumer']] })],
        }),
        Consumer: 'search-indexer',
        Mismatch: 1,
      }),
    ]);
  });
});
