/**
 * Pure planning of local fix-ups: which properties of a synthesized CloudFormation template the
 * local emulator's CloudFormation may have dropped, and how to tell whether the deployed resource
 * has them. No I/O here; `apply-fixups.ts` checks and repairs the deployed resources.
 *
 * Measured on MiniStack 1.5.33: `TimeToLiveSpecification` and `PointInTimeRecoverySpecification`
 * of `AWS::DynamoDB::Table` and `AWS::DynamoDB::GlobalTable` are dropped. Earlier versions also
 * dropped `AWS::SQS::Queue` `RedrivePolicy` and created FIFO queues without a `.fifo` name as
 * standard queues, so those are checked too.
 */

/** The part of a CloudFormation template the planner reads. */
export interface CloudFormationTemplate {
  readonly Resources?: Readonly<Record<string, CloudFormationResource>>;
}

/** One resource of a CloudFormation template. */
export interface CloudFormationResource {
  readonly Type: string;
  readonly Properties?: Readonly<Record<string, unknown>>;
  readonly Metadata?: Readonly<Record<string, unknown>>;
  readonly DeletionPolicy?: string;
}

/** Where a redrive policy sends dead letters: another resource of the stack, or a literal ARN. */
export type DeadLetterTarget = { readonly logicalId: string } | { readonly arn: string };

interface CheckBase {
  /** Logical id in the template. */
  readonly logicalId: string;
  /** The construct path (`aws:cdk:path` without `/Resource`), or the logical id outside CDK. */
  readonly path: string;
}

/** The queue must have this redrive policy (`SetQueueAttributes RedrivePolicy` fixes it). */
export interface QueueRedriveCheck extends CheckBase {
  readonly kind: 'queue-redrive';
  readonly deadLetterTarget: DeadLetterTarget;
  readonly maxReceiveCount: number;
}

/** The queue must be FIFO; content-based deduplication is fixable, FIFO itself is not. */
export interface QueueFifoCheck extends CheckBase {
  readonly kind: 'queue-fifo';
  /** `undefined` when the template leaves it to the default. */
  readonly contentBasedDeduplication: boolean | undefined;
}

/** TTL must be enabled on this attribute (`UpdateTimeToLive` fixes it). */
export interface TableTtlCheck extends CheckBase {
  readonly kind: 'table-ttl';
  readonly attributeName: string;
}

/** Point-in-time recovery must be on (`UpdateContinuousBackups` fixes it). */
export interface TablePitrCheck extends CheckBase {
  readonly kind: 'table-pitr';
  /** `undefined` when the template leaves it to the default (35 days). */
  readonly recoveryPeriodInDays: number | undefined;
}

/** One property to check on a deployed resource. */
export type LocalFixupCheck = QueueRedriveCheck | QueueFifoCheck | TableTtlCheck | TablePitrCheck;

/** Kinds of {@link LocalFixupCheck}. */
export type LocalFixupKind = LocalFixupCheck['kind'];

/** A property the planner cannot check, because its value is only known at deploy time. */
export interface UncheckedProperty extends CheckBase {
  readonly property: string;
  readonly reason: string;
}

/** What to check on one stack. */
export interface LocalFixupPlan {
  readonly checks: readonly LocalFixupCheck[];
  readonly unchecked: readonly UncheckedProperty[];
}

/** Options for {@link planLocalFixups}. */
export interface PlanLocalFixupsOptions {
  /**
   * The deploy region, to pick a global table's replica.
   * @default the replica whose `Region` is `{ Ref: 'AWS::Region' }`, else the only replica
   */
  readonly region?: string;
}

/**
 * Lists the properties of `template` that the emulator's CloudFormation may have dropped, in
 * template order (per resource: redrive, FIFO, TTL, point-in-time recovery).
 *
 * @example
 * const plan = planLocalFixups(JSON.parse(readFileSync('cdk.out.local/App.template.json', 'utf8')));
 * // plan.checks: [{ kind: 'table-ttl', logicalId: 'InboxTable1234', path: 'App/InboxTable', attributeName: 'expiresAt' }]
 */
export function planLocalFixups(
  template: CloudFormationTemplate,
  options: PlanLocalFixupsOptions = {},
): LocalFixupPlan {
  const checks: LocalFixupCheck[] = [];
  const unchecked: UncheckedProperty[] = [];
  for (const [logicalId, resource] of Object.entries(template.Resources ?? {})) {
    const base = { logicalId, path: constructPath(logicalId, resource) };
    const properties = resource.Properties ?? {};
    const skip = (property: string, reason: string) => unchecked.push({ ...base, property, reason });

    if (resource.Type === 'AWS::SQS::Queue') {
      planRedrive(properties.RedrivePolicy, base, checks, skip);
      if (isIntrinsic(properties.FifoQueue)) skip('FifoQueue', INTRINSIC);
      if (isTrue(properties.FifoQueue)) {
        const contentBased = properties.ContentBasedDeduplication;
        checks.push({
          ...base,
          kind: 'queue-fifo',
          contentBasedDeduplication: contentBased === undefined ? undefined : isTrue(contentBased),
        });
      }
    } else if (resource.Type === 'AWS::DynamoDB::Table') {
      planTtl(properties.TimeToLiveSpecification, base, checks, skip);
      planPitr(properties.PointInTimeRecoverySpecification, base, checks, skip);
    } else if (resource.Type === 'AWS::DynamoDB::GlobalTable') {
      planTtl(properties.TimeToLiveSpecification, base, checks, skip);
      const replica = localReplica(properties.Replicas, options.region);
      if (replica) planPitr(replica.PointInTimeRecoverySpecification, base, checks, skip);
    }
  }
  return { checks, unchecked };
}

/** The redrive policy a queue should have once its dead-letter queue's ARN is known. */
export interface RedrivePolicy {
  readonly deadLetterTargetArn: string;
  readonly maxReceiveCount: number;
}

/**
 * `true` when the queue's `RedrivePolicy` attribute (a JSON string, absent when none) targets the
 * same dead-letter queue with the same `maxReceiveCount`.
 */
export function hasRedrivePolicy(attribute: string | undefined, wanted: RedrivePolicy): boolean {
  if (!attribute) return false;
  let actual: { deadLetterTargetArn?: unknown; maxReceiveCount?: unknown };
  try {
    actual = JSON.parse(attribute) as typeof actual;
  } catch {
    return false;
  }
  return (
    actual.deadLetterTargetArn === wanted.deadLetterTargetArn &&
    Number(actual.maxReceiveCount) === wanted.maxReceiveCount
  );
}

/** What `DescribeTimeToLive` shows, compared with the attribute the template wants. */
export type TtlState = 'enabled' | 'disabled' | 'other-attribute';

/** Classifies a `DescribeTimeToLive` answer against the wanted attribute. */
export function ttlState(
  description: { readonly TimeToLiveStatus?: string; readonly AttributeName?: string } | undefined,
  attributeName: string,
): TtlState {
  const status = description?.TimeToLiveStatus;
  if (status !== 'ENABLED' && status !== 'ENABLING') return 'disabled';
  return description?.AttributeName === attributeName ? 'enabled' : 'other-attribute';
}

/** A short description of a check, for messages: what the template declares. */
export function describeCheck(check: LocalFixupCheck): string {
  switch (check.kind) {
    case 'queue-redrive':
      return `redrive policy (maxReceiveCount ${check.maxReceiveCount})`;
    case 'queue-fifo':
      return check.contentBasedDeduplication ? 'FIFO with content-based deduplication' : 'FIFO';
    case 'table-ttl':
      return `TTL on \`${check.attributeName}\``;
    case 'table-pitr':
      return 'point-in-time recovery';
  }
}

type Skip = (property: string, reason: string) => void;

const INTRINSIC = 'its value comes from an intrinsic function (known only at deploy time)';

function planRedrive(value: unknown, base: CheckBase, checks: LocalFixupCheck[], skip: Skip): void {
  if (value === undefined) return;
  const policy = typeof value === 'string' ? parseJson(value) : value;
  if (isIntrinsic(policy)) {
    skip('RedrivePolicy', INTRINSIC);
    return;
  }
  if (!isRecord(policy)) {
    skip('RedrivePolicy', 'not a literal object');
    return;
  }
  const target = deadLetterTarget(policy.deadLetterTargetArn);
  const maxReceiveCount = Number(policy.maxReceiveCount);
  if (!target) {
    skip('RedrivePolicy', 'deadLetterTargetArn is neither a literal ARN nor Fn::GetAtt Arn');
    return;
  }
  if (!Number.isInteger(maxReceiveCount) || maxReceiveCount < 1) {
    skip('RedrivePolicy', 'maxReceiveCount is not a literal positive integer');
    return;
  }
  checks.push({ ...base, kind: 'queue-redrive', deadLetterTarget: target, maxReceiveCount });
}

function planTtl(value: unknown, base: CheckBase, checks: LocalFixupCheck[], skip: Skip): void {
  if (value === undefined) return;
  if (isIntrinsic(value) || isIntrinsic(isRecord(value) ? value.Enabled : undefined)) {
    skip('TimeToLiveSpecification', INTRINSIC);
    return;
  }
  if (!isRecord(value)) {
    skip('TimeToLiveSpecification', 'not a literal object');
    return;
  }
  if (!isTrue(value.Enabled)) return;
  if (typeof value.AttributeName !== 'string') {
    skip('TimeToLiveSpecification', 'AttributeName is not a literal string');
    return;
  }
  checks.push({ ...base, kind: 'table-ttl', attributeName: value.AttributeName });
}

function planPitr(value: unknown, base: CheckBase, checks: LocalFixupCheck[], skip: Skip): void {
  if (value === undefined) return;
  if (isIntrinsic(value) || isIntrinsic(isRecord(value) ? value.PointInTimeRecoveryEnabled : undefined)) {
    skip('PointInTimeRecoverySpecification', INTRINSIC);
    return;
  }
  if (!isRecord(value)) {
    skip('PointInTimeRecoverySpecification', 'not a literal object');
    return;
  }
  if (!isTrue(value.PointInTimeRecoveryEnabled)) return;
  const days = value.RecoveryPeriodInDays;
  checks.push({
    ...base,
    kind: 'table-pitr',
    recoveryPeriodInDays: days === undefined || !Number.isInteger(Number(days)) ? undefined : Number(days),
  });
}

function deadLetterTarget(value: unknown): DeadLetterTarget | undefined {
  if (typeof value === 'string') return value.startsWith('arn:') ? { arn: value } : undefined;
  if (!isRecord(value)) return undefined;
  const getAtt = value['Fn::GetAtt'];
  const [logicalId, attribute] =
    typeof getAtt === 'string' ? getAtt.split('.') : Array.isArray(getAtt) ? getAtt : [];
  return typeof logicalId === 'string' && attribute === 'Arn' ? { logicalId } : undefined;
}

function localReplica(value: unknown, region: string | undefined): Record<string, unknown> | undefined {
  const replicas = Array.isArray(value) ? value.filter(isRecord) : [];
  const isDeployRegion = (replica: Record<string, unknown>) =>
    isRecord(replica.Region) ? replica.Region.Ref === 'AWS::Region' : replica.Region === region;
  return replicas.find(isDeployRegion) ?? (replicas.length === 1 ? replicas[0] : undefined);
}

/** The construct path of a resource (`aws:cdk:path` without `/Resource`), or its logical id outside CDK. */
export function constructPath(logicalId: string, resource: CloudFormationResource): string {
  const path = resource.Metadata?.['aws:cdk:path'];
  return typeof path === 'string' ? path.replace(/\/Resource$/, '') : logicalId;
}

/** `{ Ref: ... }` or `{ 'Fn::...': ... }`: a value CloudFormation computes at deploy time. */
function isIntrinsic(value: unknown): boolean {
  if (!isRecord(value)) return false;
  const keys = Object.keys(value);
  return keys.length === 1 && (keys[0] === 'Ref' || keys[0]!.startsWith('Fn::'));
}

function isTrue(value: unknown): boolean {
  return value === true || value === 'true';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
