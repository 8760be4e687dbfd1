/**
 * Checks deployed resources against their synthesized template and re-applies, through the
 * service APIs, what the local emulator's CloudFormation dropped. Only what is missing is changed.
 */
import {
  DescribeContinuousBackupsCommand,
  DescribeTimeToLiveCommand,
  DynamoDBClient,
  UpdateContinuousBackupsCommand,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { GetQueueAttributesCommand, SetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import { type CloudFormationTarget, describeStack, listStackResources } from './cloudformation';
import {
  type CloudFormationTemplate,
  describeCheck,
  hasRedrivePolicy,
  type LocalFixupCheck,
  type LocalFixupKind,
  planLocalFixups,
  type QueueFifoCheck,
  type QueueRedriveCheck,
  type TablePitrCheck,
  type TableTtlCheck,
  ttlState,
} from './fixup-plan';

/**
 * What happened to one checked property:
 * - `ok`: the deployed resource already had it;
 * - `fixed`: it was missing and has been re-applied;
 * - `unfixable`: it is missing and cannot be applied after creation (a standard queue cannot become FIFO);
 * - `skipped`: it could not be checked (value unknown before deploy, resource not in the stack);
 * - `failed`: checking or fixing it raised an error.
 */
export type LocalFixupStatus = 'ok' | 'fixed' | 'unfixable' | 'skipped' | 'failed';

/** The outcome of one check, with a sentence for humans. */
export interface LocalFixupResult {
  readonly stackName: string;
  /** The check, or `unchecked` for a property whose value the template does not give literally. */
  readonly kind: LocalFixupKind | 'unchecked';
  readonly logicalId: string;
  /** Construct path, for example `DeployFixture/Table`. */
  readonly path: string;
  /** Queue URL or table name; `undefined` when the resource is not in the deployed stack. */
  readonly physicalId: string | undefined;
  readonly status: LocalFixupStatus;
  /** For example ``DeployFixture/Table: TTL on `expiresAt` was off; enabled it (UpdateTimeToLive)``. */
  readonly message: string;
}

/** Everything needed to check and fix one deployed stack. */
export interface StackFixupTarget extends CloudFormationTarget {
  readonly stackName: string;
  readonly template: CloudFormationTemplate;
}

/**
 * Checks one deployed stack against its template and fixes what is missing. Returns an empty list
 * when the stack does not exist.
 */
export async function applyStackFixups(target: StackFixupTarget): Promise<LocalFixupResult[]> {
  const stack = await describeStack(target, target.stackName);
  if (!stack || stack.status === 'DELETE_COMPLETE') return [];
  const plan = planLocalFixups(target.template, { region: target.region });
  const results: LocalFixupResult[] = plan.unchecked.map((property) => ({
    stackName: target.stackName,
    kind: 'unchecked',
    logicalId: property.logicalId,
    path: property.path,
    physicalId: undefined,
    status: 'skipped',
    message: `${property.path}: ${property.property} not checked (${property.reason})`,
  }));
  if (plan.checks.length === 0) return results;

  const physicalIds = new Map<string, string>();
  for (const resource of await listStackResources(target, target.stackName)) {
    if (resource.physicalId) physicalIds.set(resource.logicalId, resource.physicalId);
  }
  const clientConfig = { endpoint: target.endpoint, region: target.region, credentials: target.credentials };
  const context: FixupContext = {
    sqs: new SQSClient(clientConfig),
    dynamodb: new DynamoDBClient(clientConfig),
    physicalIds,
    queueArns: new Map(),
  };
  try {
    for (const check of plan.checks) {
      const physicalId = physicalIds.get(check.logicalId);
      const result = (status: LocalFixupStatus, detail: string): LocalFixupResult => ({
        stackName: target.stackName,
        kind: check.kind,
        logicalId: check.logicalId,
        path: check.path,
        physicalId,
        status,
        message: `${check.path}: ${detail}`,
      });
      if (physicalId === undefined) {
        results.push(
          result('skipped', `${describeCheck(check)} not checked (resource not in the deployed stack)`),
        );
        continue;
      }
      try {
        const [status, detail] = await applyCheck(context, check, physicalId);
        results.push(result(status, detail));
      } catch (error) {
        results.push(
          result('failed', `checking ${describeCheck(check)} failed: ${(error as Error).message}`),
        );
      }
    }
  } finally {
    context.sqs.destroy();
    context.dynamodb.destroy();
  }
  return results;
}

interface FixupContext {
  readonly sqs: SQSClient;
  readonly dynamodb: DynamoDBClient;
  readonly physicalIds: ReadonlyMap<string, string>;
  readonly queueArns: Map<string, string>;
}

type Outcome = readonly [LocalFixupStatus, string];

const DROPPED = "the emulator's CloudFormation dropped it";

function applyCheck(context: FixupContext, check: LocalFixupCheck, physicalId: string): Promise<Outcome> {
  switch (check.kind) {
    case 'queue-redrive':
      return fixRedrive(context, check, physicalId);
    case 'queue-fifo':
      return checkFifo(context, check, physicalId);
    case 'table-ttl':
      return fixTtl(context, check, physicalId);
    case 'table-pitr':
      return fixPitr(context, check, physicalId);
  }
}

async function fixRedrive(
  context: FixupContext,
  check: QueueRedriveCheck,
  queueUrl: string,
): Promise<Outcome> {
  const target = check.deadLetterTarget;
  let deadLetterTargetArn: string;
  if ('arn' in target) {
    deadLetterTargetArn = target.arn;
  } else {
    const deadLetterQueueUrl = context.physicalIds.get(target.logicalId);
    if (!deadLetterQueueUrl) {
      return [
        'skipped',
        `${describeCheck(check)} not checked (dead-letter queue ${target.logicalId} not deployed)`,
      ];
    }
    deadLetterTargetArn = await queueArn(context, deadLetterQueueUrl);
  }
  const wanted = { deadLetterTargetArn, maxReceiveCount: check.maxReceiveCount };
  const readPolicy = async () => (await queueAttributes(context, queueUrl, ['RedrivePolicy'])).RedrivePolicy;
  const before = await readPolicy();
  if (hasRedrivePolicy(before, wanted)) return ['ok', `${describeCheck(check)} in place`];

  await context.sqs.send(
    new SetQueueAttributesCommand({
      QueueUrl: queueUrl,
      Attributes: { RedrivePolicy: JSON.stringify(wanted) },
    }),
  );
  if (!hasRedrivePolicy(await readPolicy(), wanted)) {
    return ['failed', `${describeCheck(check)} is missing and SetQueueAttributes did not apply it`];
  }
  const was = before ? `differed (${before})` : `was missing (${DROPPED})`;
  return ['fixed', `${describeCheck(check)} ${was}; set it to ${deadLetterTargetArn} (SetQueueAttributes)`];
}

async function checkFifo(context: FixupContext, check: QueueFifoCheck, queueUrl: string): Promise<Outcome> {
  const attributes = await queueAttributes(context, queueUrl, ['FifoQueue', 'ContentBasedDeduplication']);
  if (attributes.FifoQueue !== 'true') {
    return [
      'unfixable',
      'declared FIFO but deployed as a standard queue, which cannot be converted: give the queue an ' +
        'explicit `queueName` ending in `.fifo`',
    ];
  }
  const wanted = check.contentBasedDeduplication;
  if (wanted === undefined || (attributes.ContentBasedDeduplication === 'true') === wanted) {
    return ['ok', `${describeCheck(check)} in place`];
  }
  await context.sqs.send(
    new SetQueueAttributesCommand({
      QueueUrl: queueUrl,
      Attributes: { ContentBasedDeduplication: String(wanted) },
    }),
  );
  return ['fixed', `content-based deduplication was ${!wanted}; set it to ${wanted} (SetQueueAttributes)`];
}

async function fixTtl(context: FixupContext, check: TableTtlCheck, tableName: string): Promise<Outcome> {
  const describe = async () =>
    (await context.dynamodb.send(new DescribeTimeToLiveCommand({ TableName: tableName })))
      .TimeToLiveDescription;
  const before = await describe();
  const state = ttlState(before, check.attributeName);
  if (state === 'enabled') return ['ok', `${describeCheck(check)} in place`];

  const update = (attributeName: string, enabled: boolean) =>
    context.dynamodb.send(
      new UpdateTimeToLiveCommand({
        TableName: tableName,
        TimeToLiveSpecification: { AttributeName: attributeName, Enabled: enabled },
      }),
    );
  // A table has at most one TTL attribute: switch the wrong one off before enabling the declared one.
  if (state === 'other-attribute' && before?.AttributeName) await update(before.AttributeName, false);
  await update(check.attributeName, true);
  if (ttlState(await describe(), check.attributeName) !== 'enabled') {
    return ['failed', `${describeCheck(check)} is off and UpdateTimeToLive did not enable it`];
  }
  const was =
    state === 'other-attribute' ? `was on \`${before?.AttributeName}\` instead` : `was off (${DROPPED})`;
  return ['fixed', `${describeCheck(check)} ${was}; enabled it (UpdateTimeToLive)`];
}

async function fixPitr(context: FixupContext, check: TablePitrCheck, tableName: string): Promise<Outcome> {
  const describe = async () =>
    (await context.dynamodb.send(new DescribeContinuousBackupsCommand({ TableName: tableName })))
      .ContinuousBackupsDescription?.PointInTimeRecoveryDescription;
  const isApplied = (description: Awaited<ReturnType<typeof describe>>) =>
    description?.PointInTimeRecoveryStatus === 'ENABLED' &&
    (check.recoveryPeriodInDays === undefined ||
      description.RecoveryPeriodInDays === check.recoveryPeriodInDays);
  if (isApplied(await describe())) return ['ok', `${describeCheck(check)} in place`];

  await context.dynamodb.send(
    new UpdateContinuousBackupsCommand({
      TableName: tableName,
      PointInTimeRecoverySpecification: {
        PointInTimeRecoveryEnabled: true,
        ...(check.recoveryPeriodInDays === undefined
          ? {}
          : { RecoveryPeriodInDays: check.recoveryPeriodInDays }),
      },
    }),
  );
  if (!isApplied(await describe())) {
    return ['failed', `${describeCheck(check)} is off and UpdateContinuousBackups did not enable it`];
  }
  return ['fixed', `${describeCheck(check)} was off (${DROPPED}); enabled it (UpdateContinuousBackups)`];
}

async function queueArn(context: FixupContext, queueUrl: string): Promise<string> {
  let arn = context.queueArns.get(queueUrl);
  if (!arn) {
    arn = (await queueAttributes(context, queueUrl, ['QueueArn'])).QueueArn;
    if (!arn) throw new Error(`GetQueueAttributes returned no QueueArn for ${queueUrl}`);
    context.queueArns.set(queueUrl, arn);
  }
  return arn;
}

async function queueAttributes(
  context: FixupContext,
  queueUrl: string,
  names: ('RedrivePolicy' | 'FifoQueue' | 'ContentBasedDeduplication' | 'QueueArn')[],
): Promise<Partial<Record<string, string>>> {
  const response = await context.sqs.send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: names }),
  );
  return response.Attributes ?? {};
}
