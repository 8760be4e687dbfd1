/**
 * The CloudFormation calls the local deploy needs (find physical ids, delete stacks by name),
 * through the AWS SDK v3 client: plain AWS APIs, nothing emulator-specific.
 */
import {
  CloudFormationClient,
  DeleteStackCommand,
  DescribeStacksCommand,
  paginateListStackResources,
} from '@aws-sdk/client-cloudformation';

/** Where and as whom to call CloudFormation. */
export interface CloudFormationTarget {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: { readonly accessKeyId: string; readonly secretAccessKey: string };
}

/** One resource of a deployed stack. */
export interface StackResource {
  readonly logicalId: string;
  readonly physicalId: string | undefined;
  readonly type: string;
  readonly status: string;
}

/** A stack's identity and status. */
export interface StackSummary {
  readonly stackId: string;
  readonly stackName: string;
  readonly status: string;
}

/**
 * Runs `call` with a client for `target`, destroyed afterwards (no idle connection outlives the
 * call and keeps the process alive).
 */
async function withClient<T>(
  target: CloudFormationTarget,
  call: (client: CloudFormationClient) => Promise<T>,
): Promise<T> {
  const client = new CloudFormationClient({
    endpoint: target.endpoint,
    region: target.region,
    credentials: { ...target.credentials },
    // A local endpoint that refuses the connection should say so at once, not after backoff.
    maxAttempts: 2,
  });
  try {
    return await call(client);
  } finally {
    client.destroy();
  }
}

/** The stack named `stackName`, or `undefined` when CloudFormation says it does not exist. */
export async function describeStack(
  target: CloudFormationTarget,
  stackName: string,
): Promise<StackSummary | undefined> {
  let stack: { StackId?: string; StackName?: string; StackStatus?: string } | undefined;
  try {
    const response = await withClient(target, (client) =>
      client.send(new DescribeStacksCommand({ StackName: stackName })),
    );
    stack = response.Stacks?.[0];
  } catch (error) {
    if (isStackMissing(error)) return undefined;
    throw error;
  }
  if (stack?.StackStatus === undefined) return undefined;
  return { stackId: stack.StackId ?? '', stackName: stack.StackName ?? stackName, status: stack.StackStatus };
}

/** Every resource of a stack, following `NextToken` pages. */
export async function listStackResources(
  target: CloudFormationTarget,
  stackName: string,
): Promise<StackResource[]> {
  return withClient(target, async (client) => {
    const resources: StackResource[] = [];
    for await (const page of paginateListStackResources({ client }, { StackName: stackName })) {
      for (const summary of page.StackResourceSummaries ?? []) {
        resources.push({
          logicalId: summary.LogicalResourceId ?? '',
          physicalId: summary.PhysicalResourceId || undefined,
          type: summary.ResourceType ?? '',
          status: summary.ResourceStatus ?? '',
        });
      }
    }
    return resources;
  });
}

/** Asks CloudFormation to delete a stack. Returns at once; poll {@link describeStack} to wait. */
export async function deleteStack(target: CloudFormationTarget, stackName: string): Promise<void> {
  await withClient(target, (client) => client.send(new DeleteStackCommand({ StackName: stackName })));
}

/** `true` for the error CloudFormation answers when a stack does not exist. */
export function isStackMissing(error: unknown): boolean {
  const { name, message } = (error ?? {}) as { name?: unknown; message?: unknown };
  return name === 'ValidationError' && typeof message === 'string' && /does not exist/i.test(message);
}

/**
 * `true` when CloudFormation answered with an error (the endpoint is reachable), as opposed to a
 * connection failure: service errors carry the HTTP status of the answer.
 */
export function isServiceAnswer(error: unknown): boolean {
  const { $metadata } = (error ?? {}) as { $metadata?: { httpStatusCode?: number } };
  return typeof $metadata?.httpStatusCode === 'number';
}
