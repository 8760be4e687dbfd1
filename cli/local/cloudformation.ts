/**
 * A minimal CloudFormation client over the query API (form-encoded POST, XML answer): just the
 * calls the local deploy needs to find physical ids and delete stacks by name.
 */
import { type SigningCredentials, signRequest } from './sigv4';

/** Where and as whom to call CloudFormation. */
export interface CloudFormationTarget {
  readonly endpoint: string;
  readonly region: string;
  readonly credentials: SigningCredentials;
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

/** A CloudFormation error answer, recognised by `code` (for example `ValidationError`). */
export class CloudFormationError extends Error {
  override readonly name = 'CloudFormationError';

  constructor(
    readonly code: string,
    message: string,
    readonly httpStatus: number,
  ) {
    super(message);
  }
}

const API_VERSION = '2010-05-15';
const REQUEST_TIMEOUT_MILLIS = 30_000;

/** The stack named `stackName`, or `undefined` when CloudFormation says it does not exist. */
export async function describeStack(
  target: CloudFormationTarget,
  stackName: string,
): Promise<StackSummary | undefined> {
  let xml: string;
  try {
    xml = await callCloudFormation(target, 'DescribeStacks', { StackName: stackName });
  } catch (error) {
    if (isStackMissing(error)) return undefined;
    throw error;
  }
  // One stack was asked for, so the first of each element is its own (nested members are outputs).
  const status = xmlText(xml, 'StackStatus');
  if (status === undefined) return undefined;
  return {
    stackId: xmlText(xml, 'StackId') ?? '',
    stackName: xmlText(xml, 'StackName') ?? stackName,
    status,
  };
}

/** Every resource of a stack, following `NextToken` pages. */
export async function listStackResources(
  target: CloudFormationTarget,
  stackName: string,
): Promise<StackResource[]> {
  const resources: StackResource[] = [];
  let nextToken: string | undefined;
  do {
    const xml = await callCloudFormation(target, 'ListStackResources', {
      StackName: stackName,
      ...(nextToken ? { NextToken: nextToken } : {}),
    });
    for (const member of xmlElements(xml, 'member')) {
      resources.push({
        logicalId: xmlText(member, 'LogicalResourceId') ?? '',
        physicalId: xmlText(member, 'PhysicalResourceId') || undefined,
        type: xmlText(member, 'ResourceType') ?? '',
        status: xmlText(member, 'ResourceStatus') ?? '',
      });
    }
    nextToken = xmlText(xml, 'NextToken') || undefined;
  } while (nextToken);
  return resources;
}

/** Asks CloudFormation to delete a stack. Returns at once; poll {@link describeStack} to wait. */
export async function deleteStack(target: CloudFormationTarget, stackName: string): Promise<void> {
  await callCloudFormation(target, 'DeleteStack', { StackName: stackName });
}

/** `true` for the error CloudFormation answers when a stack does not exist. */
export function isStackMissing(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error as Partial<CloudFormationError>).code === 'ValidationError' &&
    /does not exist/i.test(error.message)
  );
}

async function callCloudFormation(
  target: CloudFormationTarget,
  action: string,
  params: Readonly<Record<string, string>>,
): Promise<string> {
  const body = new URLSearchParams({ Action: action, Version: API_VERSION, ...params }).toString();
  const url = `${target.endpoint.replace(/\/+$/, '')}/`;
  const headers = signRequest({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' },
    body,
    service: 'cloudformation',
    region: target.region,
    credentials: target.credentials,
    now: new Date(),
  });
  // `fetch` sets Host itself and refuses to be told.
  delete headers.host;
  const response = await fetch(url, {
    method: 'POST',
    headers,
    body,
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MILLIS),
  });
  const text = await response.text();
  if (!response.ok) {
    throw new CloudFormationError(
      xmlText(text, 'Code') ?? `HTTP${response.status}`,
      `CloudFormation ${action} failed: ${xmlText(text, 'Message') ?? text.slice(0, 200)}`,
      response.status,
    );
  }
  return text;
}

/** The inner XML of every `<tag>` element; the tag must not nest inside itself. */
function xmlElements(xml: string, tag: string): string[] {
  const pattern = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, 'g');
  return [...xml.matchAll(pattern)].map((match) => match[1] ?? '');
}

/** The decoded text of the first `<tag>` element, `''` for `<tag/>`, `undefined` when absent. */
function xmlText(xml: string, tag: string): string | undefined {
  if (new RegExp(`<${tag}\\s*/>`).test(xml)) return '';
  const match = new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(xml);
  return match ? decodeXmlEntities(match[1] ?? '') : undefined;
}

function decodeXmlEntities(text: string): string {
  return text.replace(/&(#x[0-9a-fA-F]+|#\d+|amp|lt|gt|quot|apos);/g, (_, entity: string) => {
    if (entity.startsWith('#x')) return String.fromCodePoint(Number.parseInt(entity.slice(2), 16));
    if (entity.startsWith('#')) return String.fromCodePoint(Number.parseInt(entity.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[entity] ?? '';
  });
}
