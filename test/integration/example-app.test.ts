import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeKeyAttributes, scanTable } from '../../cli/replay/aws';
import { diffSnapshots } from '../../cli/replay/diff';
import { createTableSnapshot, type TableSnapshot } from '../../cli/replay/snapshot';
import { projectRoot } from '../../scripts/local-aws/harness';
import {
  awaitChain,
  type ChainObservation,
  checkChain,
  checkChainUnchanged,
  confirmedOrders,
  observeChain,
} from '../../scripts/main-job/chain';
import { type Downstream, startDownstream } from '../../scripts/main-job/downstream';
import {
  deployExample,
  destroyExample,
  type ExampleDeployment,
} from '../../scripts/main-job/example-deployment';
import { deliveriesOf, readOutcomeTotals } from '../../scripts/main-job/observations';
import { loadSampleLogs } from '../../scripts/main-job/sample-logs';
import {
  checkFirstRun,
  checkReplay,
  createExampleHarness,
  type ExampleHarness,
  type ExampleObservation,
  firstRunDeliveries,
  observeExample,
  replayDeliveries,
  replayExample,
  runSampleLogs,
  type SampleRun,
  sampleDownstreamFailures,
} from '../../scripts/main-job/scenario';
import {
  awaitStreamProjection,
  readOrderSummaries,
  replayOrdersStream,
} from '../../scripts/main-job/stream-projection';
import { redeliver, sendLog, waitForQueues } from '../../scripts/main-job/traffic';
import { checkWorkerSwitch, runOrdersOnWorker } from '../../scripts/main-job/worker-switch';
import { awsConfig, uniqueName } from '../support/aws';

const root = projectRoot();
const stackName = uniqueName('EoExampleE2E');
const workDir = mkdtempSync(join(tmpdir(), 'example-app-test-'));

describe('the example app deployed to local AWS', () => {
  const aws = awsConfig();
  const logs = loadSampleLogs(root);
  let deployment: ExampleDeployment | undefined;
  let downstream: Downstream | undefined;
  let harness: ExampleHarness | undefined;
  let run: SampleRun | undefined;
  let first: ExampleObservation | undefined;
  let chain: ChainObservation | undefined;

  const deployed = () => {
    if (!harness || !deployment || !downstream) throw new Error(`The stack ${stackName} was not deployed`);
    return { harness, outputs: deployment.outputs, downstream: downstream.ledger };
  };
  const afterFirstRun = () => {
    if (!run || !first) throw new Error('The sample logs were not sent: the first test did not run');
    return { run, first };
  };
  const snapshotTables = async (): Promise<TableSnapshot[]> => {
    const { harness, outputs } = deployed();
    const tables = [outputs.ordersTableName, outputs.auditTableName, outputs.inboxTableName];
    return Promise.all(
      tables.map(async (table) =>
        createTableSnapshot(
          table,
          await describeKeyAttributes(harness.dynamodb, table),
          await scanTable(harness.dynamodb, table),
        ),
      ),
    );
  };

  beforeAll(async () => {
    // The functions run on this host (MiniStack), so they reach a server on 127.0.0.1.
    downstream = await startDownstream({ failures: sampleDownstreamFailures(logs) });
    deployment = await deployExample({
      aws,
      root,
      stackName,
      downstreamUrl: downstream.url,
      outputDir: join(workDir, 'cdk.out'),
      outputsFile: join(workDir, 'outputs.json'),
      logFile: join(root, '.local', 'logs', 'example-app-test.log'),
    });
    harness = createExampleHarness(aws, deployment.outputs, downstream.ledger);
  }, 240_000);

  afterAll(async () => {
    harness?.destroy();
    await downstream?.close();
    if (deployment) await destroyExample(aws, stackName).catch(() => {});
    rmSync(workDir, { recursive: true, force: true });
  }, 90_000);

  it('writes each order effect once, one audit item per event and one payment notification per status, whatever the resends, redeliveries and retries', async () => {
    const { harness } = deployed();
    // The payment log's transient failures come back after the local visibility timeout (30 s).
    run = await runSampleLogs(harness, logs);
    first = await observeExample(harness, firstRunDeliveries(logs));

    expect(first.tables.ordersItems).toBe(9);
    expect(first.tables.inboxRecords).toEqual({ orders: 6, audit: 0, payments: 5 });
    expect(first.tables.auditItems).toBe(5);
    expect(Object.fromEntries(first.tables.orders)).toEqual({
      'o-1001': { status: 'SHIPPED', amount: 4200, statuses: 3 },
      'o-1002': { status: 'PAID', amount: 1500, statuses: 2 },
      'o-1003': { status: 'PLACED', amount: 990, statuses: 1 },
    });
    expect(first.outcomes.orders).toMatchObject({ processed: 6, duplicate: 3, permanent: 1, retry: 0 });
    expect(first.outcomes.audit).toMatchObject({ processed: 5, duplicate: 3, permanent: 0, retry: 0 });
    expect(first.outcomes.payments).toMatchObject({ processed: 5, duplicate: 3, permanent: 1, retry: 2 });
    expect(Object.values(run.redeliveries).flatMap((results) => results.flatMap((r) => r.failures))).toEqual(
      [],
    );
    expect(checkFirstRun(logs, run, first).filter((check) => !check.ok)).toEqual([]);
  }, 180_000);

  // Right after the first run: the stream consumer's inbox records are settled before the tests
  // that compare table snapshots.
  it('projects the Orders stream into one OrderSummaries counter per status, and re-feeding the whole stream changes nothing', async () => {
    const { harness } = deployed();
    afterFirstRun();

    const projection = await awaitStreamProjection(harness);

    expect(projection.records).toBe(12);
    expect(projection.summaries).toEqual({
      PAID: { orders: 2, amount: 5700 },
      PLACED: { orders: 3, amount: 6690 },
      SHIPPED: { orders: 1, amount: 4200 },
    });
    expect(projection.summaries).toEqual(projection.implied);
    expect(projection.outcomes).toMatchObject({ processed: 12, duplicate: 0, permanent: 0, retry: 0 });
    expect(projection.deadLetters).toBe(0);

    const replay = await replayOrdersStream(harness);

    expect(replay).toMatchObject({ records: 12, batches: 1, failures: [] });
    expect(replay.outcomes).toMatchObject({
      processed: 0,
      duplicate: 12,
      permanent: 0,
      retry: 0,
      mismatch: 0,
    });
    expect(replay.after).toEqual(replay.before);
    expect(await readOrderSummaries(harness)).toEqual(projection.summaries);
  }, 120_000);

  it('relays each OrderConfirmed to the shipment scheduler, re-publishes the event the relay crashed after with the same id, and ships each confirmed order once', async () => {
    const { harness, outputs } = deployed();
    afterFirstRun();
    const expected = {
      confirmed: confirmedOrders(logs.orders, outputs.orderProjectorConsumerName),
      crash: outputs.relayCrashTableName !== undefined,
    };
    expect(expected.confirmed.map((order) => order.orderId)).toEqual(['o-1001', 'o-1002']);
    expect(expected.crash).toBe(true);

    const run = await awaitChain(harness, expected);
    chain = run.observation;

    expect(run.missing).toEqual([]);
    expect(chain.outbox.map((item) => item.id).sort()).toEqual(
      expected.confirmed.map((order) => order.eventId).sort(),
    );
    expect(chain.relay.crashes).toHaveLength(1);
    expect(chain.crashMarkers).toEqual(chain.relay.crashes);
    expect(chain.relay.published.filter((id) => id === chain?.relay.crashes[0])).toHaveLength(2);
    expect(chain.relay.published).toHaveLength(3);
    expect(chain.shipping).toMatchObject({ processed: 2, duplicate: 1, permanent: 0, retry: 0, mismatch: 0 });
    expect(chain.shipments.map((item) => item.pk)).toEqual(['SHIPMENT#o-1001', 'SHIPMENT#o-1002']);
    expect(checkChain(expected, run).filter((check) => !check.ok)).toEqual([]);
  }, 120_000);

  it('calls the downstream once per payment status, retrying a 503 and a lost answer with the same Idempotency-Key', () => {
    const { first } = afterFirstRun();
    const { requests, applications } = first.downstream;

    expect(applications.map((application) => application.payment).sort()).toEqual([
      'pay-2001:AUTHORIZED',
      'pay-2001:CAPTURED',
      'pay-2002:AUTHORIZED',
      'pay-2002:CAPTURED',
      'pay-2003:AUTHORIZED',
    ]);
    expect(new Set(applications.map((application) => application.key)).size).toBe(5);
    expect(requests).toHaveLength(7);
    expect(requests.every((request) => /^[0-9a-f]{64}$/.test(request.key ?? ''))).toBe(true);

    const unavailable = requests.filter((request) => request.payment === 'pay-2003:AUTHORIZED');
    expect(unavailable.map(({ status, answer }) => ({ status, answer }))).toEqual([
      { status: 503, answer: 'failed' },
      { status: 201, answer: 'applied' },
    ]);
    expect(unavailable[0]?.key).toBe(unavailable[1]?.key);

    const lost = requests.filter((request) => request.payment === 'pay-2002:CAPTURED');
    expect(lost.map(({ status, answer }) => ({ status, answer }))).toEqual([
      { status: 504, answer: 'failed' },
      { status: 200, answer: 'replayed' },
    ]);
    expect(lost[0]?.key).toBe(lost[1]?.key);
    expect(lost[1]?.notificationId).toBe(lost[0]?.notificationId);

    // The notifier completed each claim with what the downstream answered.
    expect(first.tables.notifications.map((record) => record.notificationId).sort()).toEqual(
      applications.map((application) => application.notificationId).sort(),
    );
    expect(first.tables.notifications.every((record) => record.status === 'COMPLETED')).toBe(true);
  });

  it('writes nothing for a duplicate: a producer resend and a redelivery of a processed order event', async () => {
    const { harness, outputs } = deployed();
    const { run } = afterFirstRun();
    const paid = logs.orders.entries[2]!; // o-1001 PAID, processed in the first test
    const before = await snapshotTables();
    const metricsBefore = await readOutcomeTotals(harness, outputs.orderProjectorFunctionName);

    await sendLog(harness.sqs, outputs.orderEventsQueueUrl, [
      { ...paid, line: 1, deduplicationId: `${paid.deduplicationId}#test-resend` },
    ]);
    await waitForQueues(harness.sqs, [outputs.orderEventsQueueUrl]);
    const redelivered = await redeliver(harness, {
      functionName: outputs.orderProjectorFunctionName,
      queueUrl: outputs.orderEventsQueueUrl,
      entry: paid,
      messageId: run.sent.orders.get(paid.line)!,
    });

    expect(redelivered.failures).toEqual([]);
    expect(diffSnapshots(before, await snapshotTables())).toEqual([]);
    let metricsAfter = await readOutcomeTotals(harness, outputs.orderProjectorFunctionName);
    for (
      let attempt = 0;
      attempt < 20 && deliveriesOf(metricsAfter) < deliveriesOf(metricsBefore) + 2;
      attempt++
    ) {
      await new Promise((done) => setTimeout(done, 250));
      metricsAfter = await readOutcomeTotals(harness, outputs.orderProjectorFunctionName);
    }
    expect({
      processed: metricsAfter.processed - metricsBefore.processed,
      duplicate: metricsAfter.duplicate - metricsBefore.duplicate,
    }).toEqual({ processed: 0, duplicate: 2 });
  }, 60_000);

  it('calls the downstream no more for a producer resend and a redelivery of a notified payment', async () => {
    const { harness, outputs, downstream } = deployed();
    const { run } = afterFirstRun();
    const captured = logs.payments.entries[2]!; // pay-2001 CAPTURED, notified in the first test
    const requestsBefore = downstream.snapshot().requests.length;
    const before = await snapshotTables();
    const metricsBefore = await readOutcomeTotals(harness, outputs.paymentNotifierFunctionName);

    await sendLog(harness.sqs, outputs.paymentEventsQueueUrl, [{ ...captured, line: 1 }]);
    await waitForQueues(harness.sqs, [outputs.paymentEventsQueueUrl]);
    const redelivered = await redeliver(harness, {
      functionName: outputs.paymentNotifierFunctionName,
      queueUrl: outputs.paymentEventsQueueUrl,
      entry: captured,
      messageId: run.sent.payments.get(captured.line)!,
    });

    expect(redelivered.failures).toEqual([]);
    expect(downstream.snapshot().requests.length).toBe(requestsBefore);
    expect(diffSnapshots(before, await snapshotTables())).toEqual([]);
    let metricsAfter = await readOutcomeTotals(harness, outputs.paymentNotifierFunctionName);
    for (
      let attempt = 0;
      attempt < 20 && deliveriesOf(metricsAfter) < deliveriesOf(metricsBefore) + 2;
      attempt++
    ) {
      await new Promise((done) => setTimeout(done, 250));
      metricsAfter = await readOutcomeTotals(harness, outputs.paymentNotifierFunctionName);
    }
    expect({
      processed: metricsAfter.processed - metricsBefore.processed,
      duplicate: metricsAfter.duplicate - metricsBefore.duplicate,
    }).toEqual({ processed: 0, duplicate: 2 });
  }, 60_000);

  it('dead-letters the poison messages with their reason, and nothing else', () => {
    const { run, first } = afterFirstRun();
    expect(first.deadLetters.audit).toEqual([]);
    expect(first.deadLetters.orders).toEqual([
      expect.objectContaining({
        code: 'MALFORMED_BODY',
        reason: 'The body was rejected by the `parse` option: `status` must be a non-empty string',
        consumer: 'order-projector',
        sourceMessageId: run.sent.orders.get(7),
      }),
    ]);
    expect(first.deadLetters.payments).toEqual([
      expect.objectContaining({
        code: 'MALFORMED_BODY',
        reason: 'The body was rejected by the `parse` option: `amount` must be an integer',
        consumer: 'payment-notifier',
        sourceMessageId: run.sent.payments.get(7),
      }),
    ]);
  });

  it('changes nothing in the Orders, Audit, inbox, outbox and Shipments tables, publishes nothing, and calls the downstream no more, when the whole log is replayed', async () => {
    const { harness } = deployed();
    const before = await observeExample(harness, { orders: 0, audit: 0, payments: 0 });
    const replay = await replayExample(harness, logs);
    const deliveries = replayDeliveries(logs);
    const after = await observeExample(harness, {
      orders: deliveriesOf(before.outcomes.orders) + deliveries.orders,
      audit: deliveriesOf(before.outcomes.audit) + deliveries.audit,
      payments: deliveriesOf(before.outcomes.payments) + deliveries.payments,
    });

    expect(replay.overall).toEqual([]);
    for (const result of replay.replays) {
      expect(result.sinceBefore, result.name).toEqual([]);
      expect(result.doubleTap.differences, result.name).toEqual([]);
    }
    expect(after.outcomes.orders.processed - before.outcomes.orders.processed).toBe(0);
    expect(after.outcomes.audit.processed - before.outcomes.audit.processed).toBe(0);
    expect(after.outcomes.payments.processed - before.outcomes.payments.processed).toBe(0);
    expect(after.downstream).toEqual(before.downstream);
    expect(checkReplay(logs, before, after, replay).filter((check) => !check.ok)).toEqual([]);
    if (!chain) throw new Error('The chain was not observed: its test did not run');
    expect(
      checkChainUnchanged('after the replay', chain, await observeChain(harness)).filter(
        (check) => !check.ok,
      ),
    ).toEqual([]);
  }, 120_000);

  it('moves the order projector to a worker process of the same handler module, which reprocesses nothing', async () => {
    const { harness } = deployed();
    const result = await runOrdersOnWorker(harness, logs, { root });

    expect(result.mappingsTurnedOff).toBe(1);
    expect(result.worker).toMatchObject({ processed: 0, duplicate: 8, permanent: 1, retry: 0, inFlight: 0 });
    expect(deliveriesOf(result.lambda)).toBe(0);
    expect(result.differences).toEqual([]);
    expect(result.exit).toEqual({ code: 0, signal: null });
    expect(checkWorkerSwitch(logs, result).filter((check) => !check.ok)).toEqual([]);
  }, 120_000);
});
