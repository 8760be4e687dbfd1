/**
 * Command-line arguments of `effectively-once outbox redrive`. Pure: argv in, options out.
 */

import { parseStrictArgs, seconds, url } from '../replay/args';
import { ReplayError } from '../replay/errors';

/** Where the events are read and published: the relay's own configuration, or given by hand. */
export type RedriveTarget =
  /** The relay function's environment (`EO_OUTBOX_TABLE_NAME`, `EO_OUTBOX_DESTINATION_*`). */
  | { readonly kind: 'relay'; readonly relay: string }
  /** The outbox table and one destination, as the relay's variables would name them. */
  | { readonly kind: 'explicit'; readonly table: string; readonly destination: ExplicitDestination };

/** A destination named on the command line. */
export type ExplicitDestination =
  | {
      readonly kind: 'sqs';
      readonly queueUrl: string;
      /** A fair queue (`--fair-queue`): each copy carries its entity, else its type, as `MessageGroupId`. */
      readonly fair: boolean;
    }
  | {
      readonly kind: 'sns';
      readonly topicArn: string;
      /** A standard topic feeding fair queues (`--fair-queue`): each copy carries its group id. */
      readonly fair: boolean;
    }
  | { readonly kind: 'eventbridge'; readonly eventBusArn: string; readonly eventSource: string };

/** Which events to republish. */
export type RedriveSelection =
  /** The items with these event ids (`pk`). */
  | { readonly kind: 'ids'; readonly ids: readonly string[] }
  /** The items whose `createdAt` (epoch ms) is in the window; `untilMillis` absent: now. */
  | { readonly kind: 'window'; readonly sinceMillis: number; readonly untilMillis?: number }
  /** The batches the relay's event source gave up on, from its on-failure queue. */
  | {
      readonly kind: 'on-failure';
      readonly queueUrl: string;
      /** Widens each batch's arrival window on both sides, milliseconds. */
      readonly marginMillis: number;
      /** Leave the on-failure messages on the queue. */
      readonly keep: boolean;
    };

/** Resolved options of one `outbox redrive` run. */
export interface RedriveOptions {
  readonly target: RedriveTarget;
  readonly selection: RedriveSelection;
  /** List the events without publishing (and leave the on-failure messages). */
  readonly dryRun: boolean;
  /** @default the SDK's resolution (which includes `AWS_ENDPOINT_URL`) */
  readonly endpointUrl?: string;
  /** @default the SDK's resolution (`AWS_REGION`, the profile) */
  readonly region?: string;
  /** Print stack traces of errors. */
  readonly debug: boolean;
}

/** What the command line asks for. */
export type OutboxCommand =
  | { readonly kind: 'help' }
  | { readonly kind: 'redrive'; readonly options: RedriveOptions };

/**
 * How far an on-failure batch's arrival window is widened on each side by default: 15 minutes,
 * the longest a Lambda invocation runs between reading its clock for `createdAt` and committing.
 */
export const DEFAULT_MARGIN_SECONDS = 900;

/** Help text of `effectively-once outbox redrive`. */
export const REDRIVE_USAGE = `Usage: effectively-once outbox redrive (--relay FUNCTION | --table NAME DESTINATION)
                                      (--id EVENT_ID ... | --since TIME [--until TIME] | --on-failure-queue URL)
                                      [options]

Publishes outbox events again from the outbox table, with the relay's own publishing code: each
copy carries the event id as \`idempotency-key\` (and a FIFO deduplication id), so the receiving
side dedups it like any other copy. It never writes to the outbox table; running it twice, or
again after a crash, only publishes copies with the same ids.

Where (one of):
  --relay FUNCTION          the relay function's name or ARN: its environment names the outbox
                            table and the destination (needs @aws-sdk/client-lambda installed)
  --table NAME              the outbox table, with one destination:
    --queue-url URL           an SQS queue (a .fifo URL is a FIFO queue)
    --fair-queue              a fair queue, or a standard topic feeding fair queues: each copy
                              gets the relay's group id (a URL or ARN does not tell)
    --topic-arn ARN           an SNS topic (a .fifo ARN is a FIFO topic)
    --event-bus ARN           an EventBridge bus, with
    --event-source SOURCE     the entries' Source (the construct's eventSource, by default the relay's name)

What (one of):
  --id EVENT_ID             an event id (the item's pk); repeat for several
  --since TIME              items whose createdAt is at or after TIME (ISO 8601 with a zone:
  --until TIME              2026-12-01T08:00:00Z) and at or before --until (default: now); a Scan
                            of the whole table
  --on-failure-queue URL    the on-failure records of the relay's event source: for each, the items
                            created in its arrival window (one Scan for all of them), then the record
                            is deleted once all of them were published
  --margin SECONDS          widens each record's arrival window on both sides (default ${DEFAULT_MARGIN_SECONDS})
  --keep                    leave the on-failure records on the queue

Options:
  --dry-run                 list the events it would publish; publish and delete nothing
  --endpoint-url URL        AWS endpoint (default: the SDK's resolution, AWS_ENDPOINT_URL included)
  --region REGION           AWS region (default: the SDK's resolution, AWS_REGION included)
  --debug                   print stack traces of errors
  -h, --help                show this help

Prints one line per event (id, type, outcome; never the body) and a summary.
Exit codes: 0 every event published, 1 an event refused or not found or an on-failure record
left on the queue, 2 usage, AWS or connection error (a transient error stops the run after the
SDK's retries; run it again).
`;

/**
 * Parses the arguments that follow `outbox`.
 *
 * @throws {ReplayError} `USAGE` for a missing or unknown subcommand or option, or a bad value.
 */
export function parseOutboxArgs(argv: readonly string[]): OutboxCommand {
  const [subcommand, ...rest] = argv;
  if (subcommand === '--help' || subcommand === '-h') return { kind: 'help' };
  if (subcommand !== 'redrive') {
    throw new ReplayError(
      'USAGE',
      subcommand === undefined
        ? 'Expected a subcommand: redrive'
        : `Unknown subcommand \`${subcommand}\`; expected redrive`,
    );
  }
  const { values } = parseStrict(rest);
  if (values.help) return { kind: 'help' };
  for (const [name, value] of Object.entries(values)) {
    const given = ([] as unknown[]).concat(value);
    if (given.some((text) => typeof text === 'string' && text.trim() === '')) {
      throw new ReplayError('USAGE', `Expected \`--${name}\` to be non-empty, got \`\``);
    }
  }
  return {
    kind: 'redrive',
    options: {
      target: targetOf(values),
      selection: selectionOf(values),
      dryRun: values['dry-run'] ?? false,
      ...(values['endpoint-url'] === undefined
        ? {}
        : { endpointUrl: url('--endpoint-url', values['endpoint-url']) }),
      ...(values.region === undefined ? {} : { region: values.region }),
      debug: values.debug ?? false,
    },
  };
}

type Values = ReturnType<typeof parseStrict>['values'];

function targetOf(values: Values): RedriveTarget {
  const destinations = (['queue-url', 'topic-arn', 'event-bus'] as const).filter(
    (name) => values[name] !== undefined,
  );
  if (values.relay !== undefined) {
    const explicit = (['table', ...destinations, 'event-source', 'fair-queue'] as const).filter(
      (name) => values[name] !== undefined,
    );
    if (explicit.length > 0) {
      throw new ReplayError(
        'USAGE',
        `\`--relay\` names the table and the destination; leave out \`--${explicit[0]}\``,
      );
    }
    return { kind: 'relay', relay: values.relay };
  }
  if (values.table === undefined) {
    throw new ReplayError('USAGE', 'Expected `--relay FUNCTION`, or `--table NAME` and a destination');
  }
  if (destinations.length !== 1) {
    throw new ReplayError(
      'USAGE',
      destinations.length === 0
        ? 'Expected a destination with `--table`: `--queue-url`, `--topic-arn` or `--event-bus`'
        : `Expected one destination, got ${destinations.map((name) => `\`--${name}\``).join(' and ')}`,
    );
  }
  if (values['event-source'] !== undefined && values['event-bus'] === undefined) {
    throw new ReplayError('USAGE', '`--event-source` goes with `--event-bus` only');
  }
  if (values['fair-queue'] !== undefined && values['event-bus'] !== undefined) {
    throw new ReplayError('USAGE', '`--fair-queue` goes with `--queue-url` or `--topic-arn` only');
  }
  return { kind: 'explicit', table: values.table, destination: destinationOf(values) };
}

function destinationOf(values: Values): ExplicitDestination {
  const fair = values['fair-queue'] ?? false;
  if (values['queue-url'] !== undefined) {
    return {
      kind: 'sqs',
      queueUrl: standard('--queue-url', url('--queue-url', values['queue-url']), fair),
      fair,
    };
  }
  if (values['topic-arn'] !== undefined) {
    return {
      kind: 'sns',
      topicArn: standard('--topic-arn', arn('--topic-arn', values['topic-arn']), fair),
      fair,
    };
  }
  if (values['event-source'] === undefined) {
    throw new ReplayError(
      'USAGE',
      '`--event-bus` needs `--event-source SOURCE`: the Source the relay gives its entries',
    );
  }
  return {
    kind: 'eventbridge',
    eventBusArn: arn('--event-bus', values['event-bus']!),
    eventSource: values['event-source'],
  };
}

function selectionOf(values: Values): RedriveSelection {
  const given = (['id', 'since', 'on-failure-queue'] as const).filter((name) => values[name] !== undefined);
  if (given.length !== 1) {
    throw new ReplayError(
      'USAGE',
      given.length === 0
        ? 'Expected what to redrive: `--id EVENT_ID`, `--since TIME` or `--on-failure-queue URL`'
        : `Expected one of \`--id\`, \`--since\` and \`--on-failure-queue\`, got ${given.map((name) => `\`--${name}\``).join(' and ')}`,
    );
  }
  const onFailure = values['on-failure-queue'];
  for (const name of ['margin', 'keep'] as const) {
    if (values[name] !== undefined && onFailure === undefined) {
      throw new ReplayError('USAGE', `\`--${name}\` goes with \`--on-failure-queue\` only`);
    }
  }
  if (values.until !== undefined && values.since === undefined) {
    throw new ReplayError('USAGE', '`--until` goes with `--since` only');
  }
  if (values.id !== undefined) return { kind: 'ids', ids: [...new Set(values.id)] };
  if (values.since !== undefined) {
    const sinceMillis = time('--since', values.since);
    const untilMillis = values.until === undefined ? undefined : time('--until', values.until);
    if (untilMillis !== undefined && untilMillis < sinceMillis) {
      throw new ReplayError(
        'USAGE',
        `Expected \`--until\` to be at or after \`--since\`, got \`${values.until}\` before \`${values.since}\``,
      );
    }
    return { kind: 'window', sinceMillis, ...(untilMillis === undefined ? {} : { untilMillis }) };
  }
  return {
    kind: 'on-failure',
    queueUrl: url('--on-failure-queue', onFailure!),
    marginMillis: seconds('--margin', values.margin, DEFAULT_MARGIN_SECONDS, { allowZero: true }) * 1000,
    keep: values.keep ?? false,
  };
}

/** ISO 8601 date and time with a zone (`Z` or an offset): a local time would be ambiguous. */
const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/;

function time(name: string, text: string): number {
  const millis = Date.parse(text);
  if (!ISO_TIME.test(text) || Number.isNaN(millis)) {
    throw new ReplayError(
      'USAGE',
      `Expected \`${name}\` to be an ISO 8601 time with a zone (2026-12-01T08:00:00Z), got \`${text}\``,
    );
  }
  return millis;
}

/** `address`, unless `fair` marks a FIFO queue or topic (`--fair-queue` names a standard one). */
function standard(name: string, address: string, fair: boolean): string {
  if (fair && address.endsWith('.fifo')) {
    throw new ReplayError(
      'USAGE',
      `\`--fair-queue\` goes with a standard queue or topic; \`${name}\` is FIFO`,
    );
  }
  return address;
}

function arn(name: string, text: string): string {
  if (!text.startsWith('arn:'))
    throw new ReplayError('USAGE', `Expected \`${name}\` to be an ARN, got \`${text}\``);
  return text;
}

function parseStrict(argv: readonly string[]) {
  return parseStrictArgs(argv, {
    relay: { type: 'string' },
    table: { type: 'string' },
    'queue-url': { type: 'string' },
    'fair-queue': { type: 'boolean' },
    'topic-arn': { type: 'string' },
    'event-bus': { type: 'string' },
    'event-source': { type: 'string' },
    id: { type: 'string', multiple: true },
    since: { type: 'string' },
    until: { type: 'string' },
    'on-failure-queue': { type: 'string' },
    margin: { type: 'string' },
    keep: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
    'endpoint-url': { type: 'string' },
    region: { type: 'string' },
    debug: { type: 'boolean' },
    help: { type: 'boolean', short: 'h' },
  });
}
