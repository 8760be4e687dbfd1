/**
 * The function a consumer construct creates from a handler file, shared by `IdempotentConsumer`
 * and `IdempotentStreamConsumer`: its own log group, a role without managed policies, and a
 * `NodejsFunction` bundled by the local esbuild with the `EO_` environment of the contract.
 */
import { type Duration, type RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import type { ConsumerMode } from '../lambda/core/contract';
import { DEFAULT_ARCHITECTURE } from './consumer-defaults';
import { assertEsbuildInstalled } from './esbuild-check';
import { attachToCapacityProvider, type ManagedInstances } from './managed-instances';

/** What the created function is made of; every optional field falls back as the props document. */
export interface ConsumerFunctionOptions {
  /** The handler's entry file. */
  readonly entry: string;
  /** The consumer mode, named in the role's description. */
  readonly mode: ConsumerMode;
  /** The role's description, when the function is not a consumer of that mode (the outbox relay). */
  readonly roleDescription?: string;
  readonly runtime?: lambda.Runtime;
  readonly architecture?: lambda.Architecture;
  readonly memorySize: number;
  readonly timeout: Duration;
  /** The user's extra environment variables. */
  readonly environment?: Record<string, string>;
  /** The `EO_` variables the construct sets; they win over `environment`. */
  readonly contractEnvironment: Record<string, string>;
  readonly logRetention?: logs.RetentionDays;
  readonly removalPolicy: RemovalPolicy;
  readonly tracing?: lambda.Tracing;
  /**
   * Why the function needs no Lambda dead-letter target (the reason of the `Serverless-LambdaDLQ`
   * acknowledgment): which event source invokes it, and where failed records go.
   */
  readonly lambdaDeadLetterReason: string;
  /** The capacity provider the function runs on, when it runs on Lambda Managed Instances. */
  readonly managedInstances?: ManagedInstances;
}

/** The created function with its role and log group. */
export interface ConsumerFunction {
  readonly handler: lambda.Function;
  readonly role: iam.Role;
  readonly logGroup: logs.LogGroup;
}

/**
 * Creates, in `scope`, the log group (`LogGroup`), the role (`Role`) and the function
 * (`Function`) of a consumer, and acknowledges the cdk-nag findings the choices explain.
 */
export function createConsumerFunction(scope: Construct, options: ConsumerFunctionOptions): ConsumerFunction {
  const logGroup = new logs.LogGroup(scope, 'LogGroup', {
    retention: options.logRetention ?? logs.RetentionDays.ONE_MONTH,
    removalPolicy: options.removalPolicy,
  });
  // An explicit role without AWSLambdaBasicExecutionRole: that managed policy allows writing
  // to every log group of the account, this one only to the function's own log group.
  const role = new iam.Role(scope, 'Role', {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: options.roleDescription ?? `Idempotent consumer ${scope.node.path} (${options.mode} mode)`,
  });
  logGroup.grantWrite(role);
  const tracing = options.tracing ?? lambda.Tracing.DISABLED;
  assertEsbuildInstalled(scope.node.path, Stack.of(scope).bundlingRequired);
  const handler = new nodejs.NodejsFunction(scope, 'Function', {
    entry: options.entry,
    runtime: options.runtime ?? lambda.Runtime.NODEJS_24_X,
    architecture: options.architecture ?? DEFAULT_ARCHITECTURE,
    memorySize: options.memorySize,
    timeout: options.timeout,
    role,
    logGroup,
    tracing,
    environment: {
      // The bundle ships a source map; a user's own NODE_OPTIONS wins.
      NODE_OPTIONS: '--enable-source-maps',
      ...options.environment,
      ...options.contractEnvironment,
    },
    bundling: {
      // Bundle with the esbuild in node_modules; never fall back to Docker.
      forceDockerBundling: false,
      // Ship the AWS SDK in the bundle: a pinned version, and emulators that stub an
      // external SDK lose error details the runtime relies on.
      externalModules: [],
      format: nodejs.OutputFormat.CJS,
      minify: true,
      sourceMap: true,
    },
  });
  if (options.managedInstances) attachToCapacityProvider(handler, options.managedInstances);
  Validations.of(handler).acknowledge({
    id: 'Serverless-LambdaDLQ',
    reason: options.lambdaDeadLetterReason,
  });
  if (tracing === lambda.Tracing.ACTIVE) {
    Validations.of(role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Active tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, which do not support resource-level permissions. Every other statement of this role names its resources.',
    });
  } else {
    Validations.of(handler).acknowledge({
      id: 'Serverless-LambdaTracing',
      reason:
        'Tracing is opt-in through the tracing prop: per-message observability comes from the Embedded Metric Format outcome metrics and the structured logs (dedup key, correlation id), and active tracing would add X-Ray permissions on Resource::*.',
    });
  }
  return { handler, role, logGroup };
}
