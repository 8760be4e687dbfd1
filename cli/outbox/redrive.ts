/**
 * `effectively-once outbox redrive`: publishes outbox events again from the outbox table, through
 * the relay's own destination code, so each copy carries the same id (and FIFO deduplication id)
 * as the relay's publish. It reads the table and never writes it; the receiving side dedups the
 * copies it already applied.
 */

import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { SNSClient } from '@aws-sdk/client-sns';
import { type Message, SQSClient } from '@aws-sdk/client-sqs';
import { OUTBOX_ATTRIBUTES, OUTBOX_ENV } from '../../lambda/core/contract';
import type { Environment } from '../../lambda/core/environment';
import { dispositionOf, isEffectivelyOnceError } from '../../lambda/core/errors';
import type { OutboxDestination } from '../../lambda/outbox/destinations';
import type { OutboxMessage } from '../../lambda/outbox/outbox-item';
import { outboxMessageOf } from '../../lambda/outbox/outbox-relay';
import { outboxDestinationFromEnvironment } from '../../lambda/outbox/relay-environment';
import { classifyPublishError } from '../../lambda/store/classify-aws-error';
import { commandClientConfig } from '../replay/aws';
import { ReplayError } from '../replay/errors';
import { type CliIo, EXIT } from '../replay/run';
import type { ExplicitDestination, RedriveOptions, RedriveSelection, RedriveTarget } from './args';
import {
  type ClientConfig,
  deleteMessage,
  type OutboxItem,
  readFunctionEnvironment,
  readOutboxItem,
  receiveAll,
  releaseMessage,
  scanCreatedBetween,
} from './aws';
import { parseOnFailureRecord, type StreamBatchInfo, tableOfStream } from './on-failure-record';

/** Exit codes of a redrive, as the CLI's: 1 is "not everything was published". */
const REDRIVE_EXIT = Object.freeze({ done: EXIT.unchanged, incomplete: EXIT.changed });

/** What happened to one event. */
type Outcome = 'published' | 'would publish' | 'refused' | 'not found' | 'not an outbox event';

/** The AWS clients of one run. */
interface Clients {
  readonly dynamodb: DynamoDBClient;
  readonly sqs: SQSClient;
  readonly sns: SNSClient;
  readonly eventBridge: EventBridgeClient;
}

/**
 * Runs one redrive as the CLI does and returns the exit code: 0 when every selected event was
 * published (or listed, with `dryRun`), 1 when one was refused or not found or an on-failure
 * record stays on its queue. Errors that stop the run (AWS, connection, a publish failure that is
 * not a refusal) are thrown (see `main`).
 */
export async function runRedrive(
  options: RedriveOptions,
  io: CliIo,
  now: () => number = Date.now,
): Promise<number> {
  const clientConfig = commandClientConfig(options);
  const config: ClientConfig = clientConfig.common;
  const clients: Clients = {
    dynamodb: new DynamoDBClient(config),
    sqs: new SQSClient(clientConfig.sqs),
    sns: new SNSClient(config),
    eventBridge: new EventBridgeClient(config),
  };
  try {
    const { table, environment } = await resolveTarget(options.target, config);
    const destination = destinationOf(environment, clients);
    const run = createRun(io, destination, options.dryRun);
    io.stdout.write(
      `Outbox table ${table}, destination ${describeDestination(environment)}${options.dryRun ? ' (dry run: nothing is published)' : ''}\n`,
    );
    await redrive(options.selection, { table, clients, run, dryRun: options.dryRun, now, io });
    io.stdout.write(`${run.summary()}\n`);
    return run.failed() ? REDRIVE_EXIT.incomplete : REDRIVE_EXIT.done;
  } finally {
    for (const client of Object.values(clients)) client.destroy();
  }
}

async function resolveTarget(
  target: RedriveTarget,
  config: ClientConfig,
): Promise<{ table: string; environment: Environment }> {
  if (target.kind === 'explicit') {
    return { table: target.table, environment: explicitEnvironment(target.destination) };
  }
  const environment = await readFunctionEnvironment(target.relay, config);
  const table = environment[OUTBOX_ENV.tableName];
  if (table === undefined || table === '') {
    throw new ReplayError(
      'CONFIGURATION',
      `The function ${target.relay} has no \`${OUTBOX_ENV.tableName}\` variable: is it an outbox relay? Pass \`--table\` and the destination instead.`,
    );
  }
  return { table, environment };
}

/** The relay's variables for a destination named on the command line. */
function explicitEnvironment(destination: ExplicitDestination): Environment {
  switch (destination.kind) {
    case 'sqs':
      return {
        [OUTBOX_ENV.destinationKind]: 'sqs',
        [OUTBOX_ENV.destinationQueueUrl]: destination.queueUrl,
        ...(destination.fair ? { [OUTBOX_ENV.destinationFair]: 'true' } : {}),
      };
    case 'sns':
      return {
        [OUTBOX_ENV.destinationKind]: 'sns',
        [OUTBOX_ENV.destinationArn]: destination.topicArn,
        ...(destination.fair ? { [OUTBOX_ENV.destinationFair]: 'true' } : {}),
      };
    case 'eventbridge':
      return {
        [OUTBOX_ENV.destinationKind]: 'eventbridge',
        [OUTBOX_ENV.destinationArn]: destination.eventBusArn,
        [OUTBOX_ENV.eventSource]: destination.eventSource,
      };
  }
}

/** The relay's own destination for `environment`, on the command's clients. */
function destinationOf(environment: Environment, clients: Clients): OutboxDestination {
  try {
    return outboxDestinationFromEnvironment(environment, clients);
  } catch (error) {
    if (isEffectivelyOnceError(error) && error.code === 'INVALID_OPTIONS') {
      throw new ReplayError('CONFIGURATION', `The relay's destination: ${error.message}`, { cause: error });
    }
    throw error;
  }
}

function describeDestination(environment: Environment): string {
  const kind = environment[OUTBOX_ENV.destinationKind];
  const address =
    kind === 'sqs' ? environment[OUTBOX_ENV.destinationQueueUrl] : environment[OUTBOX_ENV.destinationArn];
  return `${kind} ${address}`;
}

/** Publishes events one at a time, prints a line for each and counts the outcomes. */
interface Run {
  /** Publishes the item's event (or lists it) and prints its line; returns what happened. */
  publish(item: OutboxItem): Promise<Outcome>;
  /** Prints the line of an event id the table has no item for. */
  notFound(id: string): void;
  /** Prints a line about an on-failure message and counts what became of it. */
  onFailureLine(text: string, outcome: 'deleted' | 'kept' | 'left'): void;
  /** True when an event was not published or an on-failure record stays for a reason. */
  failed(): boolean;
  summary(): string;
}

function createRun(io: CliIo, destination: OutboxDestination, dryRun: boolean): Run {
  const events = new Map<Outcome, number>();
  const records = { deleted: 0, kept: 0, left: 0 };
  const count = (outcome: Outcome) => events.set(outcome, (events.get(outcome) ?? 0) + 1);
  const line = (id: string, type: string, outcome: string) => io.stdout.write(`${id} ${type} ${outcome}\n`);
  return {
    async publish(item) {
      // An item as GetItem and Scan return it has the shape of the stream's new image.
      const message = outboxMessageOf(item as unknown as Parameters<typeof outboxMessageOf>[0]);
      if (message === undefined) {
        line(item[OUTBOX_ATTRIBUTES.pk]?.S ?? '?', '-', 'not an outbox event (no String pk, type and body)');
        count('not an outbox event');
        return 'not an outbox event';
      }
      if (dryRun) {
        line(message.id, message.type, 'would publish');
        count('would publish');
        return 'would publish';
      }
      const refusal = await publishOne(destination, message);
      line(message.id, message.type, refusal === undefined ? 'published' : `refused (${refusal})`);
      const outcome = refusal === undefined ? 'published' : 'refused';
      count(outcome);
      return outcome;
    },
    notFound(id) {
      line(id, '-', 'not found');
      count('not found');
    },
    onFailureLine(text, outcome) {
      io.stdout.write(`${text}\n`);
      records[outcome] += 1;
    },
    failed: () =>
      (['refused', 'not found', 'not an outbox event'] as const).some((outcome) => events.has(outcome)) ||
      records.left > 0,
    summary() {
      const parts = (['published', 'would publish', 'refused', 'not found', 'not an outbox event'] as const)
        .filter((outcome) => events.has(outcome))
        .map((outcome) => `${events.get(outcome)} ${outcome}`);
      const recordParts = [
        records.deleted > 0 ? `${records.deleted} deleted` : '',
        records.kept > 0 ? `${records.kept} kept` : '',
        records.left > 0 ? `${records.left} left on the queue` : '',
      ].filter((part) => part !== '');
      const eventsText = parts.length === 0 ? 'no events' : parts.join(', ');
      return `Summary: ${eventsText}${recordParts.length === 0 ? '' : `; on-failure records: ${recordParts.join(', ')}`}.`;
    },
  };
}

/**
 * Publishes one event with the relay's destination. Returns the refusal (code and error name)
 * when the destination refused the request, as the relay would dead-letter it; throws on every
 * other failure (the SDK has retried it already).
 */
async function publishOne(
  destination: OutboxDestination,
  message: OutboxMessage,
): Promise<string | undefined> {
  try {
    await destination.publish(message);
    return undefined;
  } catch (error) {
    const failure = classifyPublishError(error);
    const name = (failure.cause as { name?: unknown } | undefined)?.name;
    const shown = `${failure.code}${typeof name === 'string' ? `, ${name}` : ''}`;
    if (dispositionOf(failure) === 'permanent') return shown;
    throw new ReplayError(
      'AWS',
      `Publishing event ${message.id} failed (${shown}) after the SDK's retries: the events listed above were published, ` +
        'this one and the rest were not. Run the command again: what was published is published again with the same ids.',
      { cause: error },
    );
  }
}

interface RedriveContext {
  readonly table: string;
  readonly clients: Clients;
  readonly run: Run;
  readonly dryRun: boolean;
  readonly now: () => number;
  readonly io: CliIo;
}

async function redrive(selection: RedriveSelection, context: RedriveContext): Promise<void> {
  const { table, clients, run } = context;
  switch (selection.kind) {
    case 'ids':
      for (const id of selection.ids) {
        const item = await readOutboxItem(clients.dynamodb, table, id);
        if (item === undefined) run.notFound(id);
        else await run.publish(item);
      }
      return;
    case 'window': {
      const items = await scanCreatedBetween(
        clients.dynamodb,
        table,
        selection.sinceMillis,
        selection.untilMillis ?? context.now(),
      );
      for (const item of inCreationOrder(items)) await run.publish(item);
      return;
    }
    case 'on-failure':
      return redriveOnFailure(selection, context);
  }
}

/** One on-failure message and what it asks to republish. */
interface FailedBatch {
  readonly message: Message;
  readonly batch: StreamBatchInfo;
  readonly fromMillis: number;
  readonly toMillis: number;
}

/**
 * Republishes the batches of the on-failure queue: the items created in each batch's arrival
 * window widened by the margin (a superset of the batch: the receivers dedup the rest), found by
 * one Scan over all the windows. A record is deleted once every event of its window was
 * published; a record that is not a DynamoDB Streams on-failure record, comes from another
 * table's stream, or whose window holds fewer items than its batch (expired) stays on the queue.
 */
async function redriveOnFailure(
  selection: Extract<RedriveSelection, { kind: 'on-failure' }>,
  context: RedriveContext,
): Promise<void> {
  const { table, clients, run } = context;
  const { queueUrl, marginMillis } = selection;
  const received = await receiveAll(clients.sqs, queueUrl);
  const settled = new Set<Message>();
  try {
    const batches: FailedBatch[] = [];
    for (const message of received) {
      const record = parseOnFailureRecord(message.Body);
      const source = record.kind === 'batch' ? tableOfStream(record.batch.streamArn) : undefined;
      if (record.kind === 'invalid') {
        run.onFailureLine(
          `on-failure message ${message.MessageId}: not a DynamoDB Streams on-failure record (${record.reason}); left on the queue`,
          'left',
        );
      } else if (source !== table) {
        run.onFailureLine(
          `on-failure message ${message.MessageId}: from the stream of table ${source ?? record.batch.streamArn}, not ${table}; left on the queue`,
          'left',
        );
      } else {
        const { batch } = record;
        batches.push({
          message,
          batch,
          fromMillis: batch.firstArrivalMillis - marginMillis,
          toMillis: batch.lastArrivalMillis + marginMillis,
        });
      }
    }
    if (batches.length === 0) return;

    const items = inCreationOrder(
      await scanCreatedBetween(
        clients.dynamodb,
        table,
        Math.min(...batches.map((batch) => batch.fromMillis)),
        Math.max(...batches.map((batch) => batch.toMillis)),
      ),
    );
    const windowOf = (batch: FailedBatch) =>
      items.filter((item) => {
        const createdAt = Number(item[OUTBOX_ATTRIBUTES.createdAt]?.N);
        return createdAt >= batch.fromMillis && createdAt <= batch.toMillis;
      });
    const outcomes = new Map<OutboxItem, Outcome>();
    for (const batch of batches) {
      const { shardId, startSequenceNumber, endSequenceNumber, batchSize, condition } = batch.batch;
      const found = windowOf(batch);
      context.io.stdout.write(
        `on-failure message ${batch.message.MessageId}: ${batchSize} record${batchSize === 1 ? '' : 's'} of shard ${shardId} ` +
          `(sequence numbers ${startSequenceNumber} to ${endSequenceNumber}${condition === undefined ? '' : `, ${condition}`}), ` +
          `${found.length} item${found.length === 1 ? '' : 's'} created from ${iso(batch.fromMillis)} to ${iso(batch.toMillis)}\n`,
      );
      for (const item of found) {
        if (!outcomes.has(item)) outcomes.set(item, await run.publish(item));
      }
    }

    for (const batch of batches) {
      const found = windowOf(batch);
      const unpublished = found.filter((item) => {
        const outcome = outcomes.get(item);
        return outcome !== 'published' && outcome !== 'would publish';
      }).length;
      const name = `on-failure message ${batch.message.MessageId}`;
      if (unpublished > 0) {
        run.onFailureLine(`${name}: ${unpublished} of its events not published; left on the queue`, 'left');
      } else if (found.length < batch.batch.batchSize) {
        run.onFailureLine(
          `${name}: ${found.length} items found for a batch of ${batch.batch.batchSize} (expired, or created outside the margin); left on the queue`,
          'left',
        );
      } else if (context.dryRun || selection.keep) {
        run.onFailureLine(`${name}: kept${context.dryRun ? ' (dry run)' : ' (--keep)'}`, 'kept');
      } else {
        await deleteMessage(clients.sqs, queueUrl, batch.message);
        settled.add(batch.message);
        run.onFailureLine(`${name}: deleted`, 'deleted');
      }
    }
  } finally {
    // What stays on the queue is visible again at once, also when the run stopped on an error.
    // Best effort: a message not released reappears when its 15-minute hold ends anyway, and the
    // error that stopped the run is the one to report.
    for (const message of received) {
      if (!settled.has(message)) await releaseMessage(clients.sqs, queueUrl, message).catch(() => undefined);
    }
  }
}

/** Items by `createdAt`, then id: the order they were written, stable from run to run. */
function inCreationOrder(items: readonly OutboxItem[]): OutboxItem[] {
  const createdAt = (item: OutboxItem) => Number(item[OUTBOX_ATTRIBUTES.createdAt]?.N ?? 0);
  const id = (item: OutboxItem) => item[OUTBOX_ATTRIBUTES.pk]?.S ?? '';
  return [...items].sort((a, b) => createdAt(a) - createdAt(b) || id(a).localeCompare(id(b)));
}

function iso(millis: number): string {
  return new Date(millis).toISOString();
}
