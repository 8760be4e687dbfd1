/**
 * Deploying the example app (`bin/app.ts`, the app `cdk.json` runs) to a local endpoint under a
 * chosen stack name, and reading its outputs into named fields.
 */
import { join } from 'node:path';
import { type DeployLocalResult, deployLocal, destroyLocal } from '../../cli/local/deploy';
import type { LocalAws } from '../local-aws/harness';

/** The default stack name, the one `bin/app.ts` deploys. */
export const EXAMPLE_STACK_NAME = 'EffectivelyOnceExample';

/** The example stack's outputs (see `lib/example/example-stack.ts`). */
export interface ExampleOutputs {
  readonly orderEventsQueueUrl: string;
  readonly orderEventsDeadLetterQueueUrl: string;
  readonly auditEventsQueueUrl: string;
  readonly auditEventsDeadLetterQueueUrl: string;
  readonly paymentEventsQueueUrl: string;
  readonly paymentEventsDeadLetterQueueUrl: string;
  readonly inboxTableName: string;
  readonly ordersTableName: string;
  readonly auditTableName: string;
  readonly orderProjectorFunctionName: string;
  readonly auditRecorderFunctionName: string;
  readonly paymentNotifierFunctionName: string;
  readonly orderProjectorConsumerName: string;
  readonly auditRecorderConsumerName: string;
  readonly paymentNotifierConsumerName: string;
  readonly orderSummariesTableName: string;
  readonly ordersTableStreamArn: string;
  readonly orderSummaryProjectorFunctionName: string;
  readonly orderSummaryProjectorConsumerName: string;
  readonly orderSummaryProjectorDeadLetterQueueUrl: string;
  readonly outboxTableName: string;
  readonly outboxTableStreamArn: string;
  readonly orderEventsRelayFunctionName: string;
  readonly orderEventsRelayName: string;
  readonly outboxDeadLetterQueueUrl: string;
  readonly outboxOnFailureQueueUrl: string;
  readonly shipmentEventsQueueUrl: string;
  readonly shipmentEventsDeadLetterQueueUrl: string;
  readonly shipmentsTableName: string;
  readonly shipmentSchedulerFunctionName: string;
  readonly shipmentSchedulerConsumerName: string;
  /** The table of the relay's one crash: the local stage's, absent when the stack has no crash. */
  readonly relayCrashTableName?: string;
}

type RequiredOutput = Exclude<keyof ExampleOutputs, 'relayCrashTableName'>;

/** A deployed example stack. */
export interface ExampleDeployment {
  readonly stackName: string;
  readonly outputs: ExampleOutputs;
  /** What `deployLocal` did (fix-ups, timings, CDK log). */
  readonly result: DeployLocalResult;
}

/** Options of {@link deployExample}. */
export interface DeployExampleOptions {
  readonly aws: Pick<LocalAws, 'endpoint' | 'region' | 'credentials'>;
  /** The project root (holds `cdk.json`, `node_modules`). */
  readonly root: string;
  /** @default 'EffectivelyOnceExample' ({@link EXAMPLE_STACK_NAME}) */
  readonly stackName?: string;
  /**
   * Base URL the payment notifier posts to (context `downstreamUrl`). The emulator runs the
   * functions on this host, so a server on `127.0.0.1` is reachable.
   * @default the stack's placeholder, which never resolves
   */
  readonly downstreamUrl?: string;
  /**
   * Cloud assembly directory; give each concurrent deployment its own.
   * @default 'cdk.out.local'
   */
  readonly outputDir?: string;
  /** @default '.local/cdk-outputs.json' */
  readonly outputsFile?: string;
  /** @default '.local/logs/cdk-local.log' */
  readonly logFile?: string;
  /** Progress lines (bootstrap, deploy, fix-ups). @default no output */
  readonly log?: (message: string) => void;
}

const OUTPUT_KEYS: Readonly<Record<RequiredOutput, string>> = {
  orderEventsQueueUrl: 'OrderEventsQueueUrl',
  orderEventsDeadLetterQueueUrl: 'OrderEventsDeadLetterQueueUrl',
  auditEventsQueueUrl: 'AuditEventsQueueUrl',
  auditEventsDeadLetterQueueUrl: 'AuditEventsDeadLetterQueueUrl',
  paymentEventsQueueUrl: 'PaymentEventsQueueUrl',
  paymentEventsDeadLetterQueueUrl: 'PaymentEventsDeadLetterQueueUrl',
  inboxTableName: 'InboxTableName',
  ordersTableName: 'OrdersTableName',
  auditTableName: 'AuditTableName',
  orderProjectorFunctionName: 'OrderProjectorFunctionName',
  auditRecorderFunctionName: 'AuditRecorderFunctionName',
  paymentNotifierFunctionName: 'PaymentNotifierFunctionName',
  orderProjectorConsumerName: 'OrderProjectorConsumerName',
  auditRecorderConsumerName: 'AuditRecorderConsumerName',
  paymentNotifierConsumerName: 'PaymentNotifierConsumerName',
  orderSummariesTableName: 'OrderSummariesTableName',
  ordersTableStreamArn: 'OrdersTableStreamArn',
  orderSummaryProjectorFunctionName: 'OrderSummaryProjectorFunctionName',
  orderSummaryProjectorConsumerName: 'OrderSummaryProjectorConsumerName',
  orderSummaryProjectorDeadLetterQueueUrl: 'OrderSummaryProjectorDeadLetterQueueUrl',
  outboxTableName: 'OutboxTableName',
  outboxTableStreamArn: 'OutboxTableStreamArn',
  orderEventsRelayFunctionName: 'OrderEventsRelayFunctionName',
  orderEventsRelayName: 'OrderEventsRelayName',
  outboxDeadLetterQueueUrl: 'OutboxDeadLetterQueueUrl',
  outboxOnFailureQueueUrl: 'OutboxOnFailureQueueUrl',
  shipmentEventsQueueUrl: 'ShipmentEventsQueueUrl',
  shipmentEventsDeadLetterQueueUrl: 'ShipmentEventsDeadLetterQueueUrl',
  shipmentsTableName: 'ShipmentsTableName',
  shipmentSchedulerFunctionName: 'ShipmentSchedulerFunctionName',
  shipmentSchedulerConsumerName: 'ShipmentSchedulerConsumerName',
};

/**
 * Deploys the example app in its local shape (`local=true`) with `deployLocal` (bootstrap if
 * needed, deploy, re-apply what the emulator's CloudFormation dropped) and returns its outputs.
 *
 * @throws LocalDeployError from `deployLocal`; Error when an output is missing.
 *
 * @example
 * const downstream = await startDownstream();
 * const { outputs } = await deployExample({
 *   aws,
 *   root: projectRoot(),
 *   downstreamUrl: downstream.url,
 *   log: console.log,
 * });
 */
export async function deployExample(options: DeployExampleOptions): Promise<ExampleDeployment> {
  const stackName = options.stackName ?? EXAMPLE_STACK_NAME;
  const tsx = join(options.root, 'node_modules', '.bin', 'tsx');
  const result = await deployLocal({
    endpoint: options.aws.endpoint,
    region: options.aws.region,
    credentials: options.aws.credentials,
    cwd: options.root,
    app: `${tsx} ${join('bin', 'app.ts')}`,
    context: {
      local: 'true',
      exampleStackName: stackName,
      ...(options.downstreamUrl ? { downstreamUrl: options.downstreamUrl } : {}),
    },
    ...(options.outputDir ? { outputDir: options.outputDir } : {}),
    ...(options.outputsFile ? { outputsFile: options.outputsFile } : {}),
    ...(options.logFile ? { logFile: options.logFile } : {}),
    // A line every few seconds while the CDK runs (about a minute): `npm start` is never silent.
    ...(options.log ? { log: options.log, progress: true } : {}),
  });
  const written = result.outputs[stackName] ?? {};
  const outputs = {} as Record<RequiredOutput, string>;
  for (const [field, key] of Object.entries(OUTPUT_KEYS) as [RequiredOutput, string][]) {
    const value = written[key];
    if (!value) throw new Error(`The deployed stack ${stackName} has no output ${key}`);
    outputs[field] = value;
  }
  const relayCrashTableName = written.RelayCrashTableName;
  return {
    stackName,
    outputs: { ...outputs, ...(relayCrashTableName ? { relayCrashTableName } : {}) },
    result,
  };
}

/**
 * Deletes the example stack by name (the CDK's own destroy passes the stack ARN, which the
 * emulator ignores).
 *
 * @returns whether the stack was deleted or already absent.
 */
export async function destroyExample(
  aws: Pick<LocalAws, 'endpoint' | 'region' | 'credentials'>,
  stackName: string,
  log?: (message: string) => void,
): Promise<'deleted' | 'absent' | 'reset'> {
  return destroyLocal({
    endpoint: aws.endpoint,
    region: aws.region,
    credentials: aws.credentials,
    stackName,
    ...(log ? { log } : {}),
  });
}
