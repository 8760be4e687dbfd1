/**
 * Running a consumer's function on Lambda Managed Instances: the prop that attaches it to a
 * capacity provider, its synth-time checks (each limit quoted from the AWS documentation beside
 * the check), and the attachment itself. Managed instances run many invocations at once in one
 * Node.js process; the runtime keeps each invocation's results, log lines and counts its own
 * (see `createBatchProcessor`), so the handler code is the same.
 */
import { Token } from 'aws-cdk-lib';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { describeValue } from '../lambda/core/errors';
import { DEFAULT_ARCHITECTURE } from './consumer-defaults';
import type { Fail } from './consumer-validation';

/**
 * Where and how the created function runs on Lambda Managed Instances: the options of
 * `lambda.CapacityProvider.addFunction` that apply to a consumer. The function is published to
 * `$LATEST.PUBLISHED` (CloudFormation does it), which is what the event source's unqualified
 * function ARN invokes on managed instances.
 */
export interface ManagedInstances {
  /** The capacity provider (created in this app, or imported by name or ARN). */
  readonly capacityProvider: lambda.ICapacityProvider;

  /**
   * Most invocations one execution environment runs at once (1-1600). They share the handler
   * object: the completed-record cache, the clients and everything at module scope.
   *
   * @default - Lambda's default for Node.js: 64 per vCPU
   */
  readonly perExecutionEnvironmentMaxConcurrency?: number;

  /**
   * Memory of an execution environment per vCPU, in GiB (2-8).
   *
   * @default 2
   */
  readonly executionEnvironmentMemoryGiBPerVCpu?: number;
}

/**
 * The least function memory on managed instances, MiB: "The minimum supported function size is
 * 2GB and 1 vCPU." (AWS Lambda Developer Guide, Best practices for Lambda Managed Instances,
 * Function configuration). It is also `memorySize`'s default there.
 */
export const MANAGED_INSTANCES_MIN_MEMORY_SIZE = 2048;

/**
 * The oldest Node.js runtime managed instances run: "Node.js: Node.js 22 and later." (AWS Lambda
 * Developer Guide, Lambda Managed Instances runtimes, Supported runtimes).
 */
export const MANAGED_INSTANCES_MIN_NODE_VERSION = 22;

/**
 * `PerExecutionEnvironmentMaxConcurrency`: "Valid Range: Minimum value of 1. Maximum value of
 * 1600." (AWS Lambda API Reference, LambdaManagedInstancesCapacityProviderConfig).
 */
const MAX_CONCURRENCY_RANGE = [1, 1600] as const;

/**
 * `ExecutionEnvironmentMemoryGiBPerVCpu`: "Valid Range: Minimum value of 2.0. Maximum value of
 * 8.0." (AWS Lambda API Reference, LambdaManagedInstancesCapacityProviderConfig).
 */
const MEMORY_PER_VCPU_RANGE = [2, 8] as const;

/** The props the checks read: the function's settings next to `managedInstances`. */
export interface ManagedInstancesSettings {
  readonly managedInstances?: ManagedInstances;
  readonly memorySize?: number;
  readonly runtime?: lambda.Runtime;
  readonly architecture?: lambda.Architecture;
}

/**
 * Fails for the settings Lambda refuses on managed instances: memory below 2048 MiB, a runtime
 * older than Node.js 22, option values out of range, and an architecture the capacity provider
 * (one of this app that names its architectures) does not launch.
 */
export function checkManagedInstances(props: ManagedInstancesSettings, fail: Fail): void {
  const options = props.managedInstances;
  if (options === undefined) return;
  const { memorySize, runtime } = props;
  if (
    memorySize !== undefined &&
    !Token.isUnresolved(memorySize) &&
    memorySize < MANAGED_INSTANCES_MIN_MEMORY_SIZE
  ) {
    fail(
      `Expected \`memorySize\` to be at least ${MANAGED_INSTANCES_MIN_MEMORY_SIZE} with \`managedInstances\` (Lambda Managed Instances run functions of 2 GB and more), got \`${memorySize}\``,
    );
  }
  const nodeVersion = runtime === undefined ? undefined : /^nodejs(\d+)\.x$/.exec(runtime.name)?.[1];
  if (runtime !== undefined && !(Number(nodeVersion) >= MANAGED_INSTANCES_MIN_NODE_VERSION)) {
    fail(
      `Expected \`runtime\` to be Node.js ${MANAGED_INSTANCES_MIN_NODE_VERSION} or later with \`managedInstances\`, got \`${runtime.name}\``,
    );
  }
  const inRange = (
    name: string,
    value: number | undefined,
    [min, max]: readonly [number, number],
    integer: boolean,
  ) => {
    if (value === undefined || Token.isUnresolved(value)) return;
    if ((integer && !Number.isInteger(value)) || !(value >= min && value <= max)) {
      fail(
        `Expected \`managedInstances.${name}\` to be ${integer ? 'an integer' : 'a number'} from ${min} to ${max}, got \`${describeValue(value)}\``,
      );
    }
  };
  inRange(
    'perExecutionEnvironmentMaxConcurrency',
    options.perExecutionEnvironmentMaxConcurrency,
    MAX_CONCURRENCY_RANGE,
    true,
  );
  inRange(
    'executionEnvironmentMemoryGiBPerVCpu',
    options.executionEnvironmentMemoryGiBPerVCpu,
    MEMORY_PER_VCPU_RANGE,
    false,
  );
  const launched = architecturesOf(options.capacityProvider);
  const architecture = props.architecture ?? DEFAULT_ARCHITECTURE;
  if (launched !== undefined && !launched.includes(architecture.name)) {
    fail(
      `Expected \`architecture\` to be one the capacity provider launches (${launched.join(', ')}), got \`${architecture.name}\``,
    );
  }
}

/**
 * The architectures a capacity provider of this app launches, when it names them; `undefined`
 * for an imported one, one without a constraint, or a token.
 */
function architecturesOf(provider: lambda.ICapacityProvider): readonly string[] | undefined {
  const resource = provider.node.defaultChild;
  if (!(resource instanceof lambda.CfnCapacityProvider)) return undefined;
  const requirements = resource.instanceRequirements;
  if (requirements === undefined || Token.isUnresolved(requirements)) return undefined;
  const architectures = (requirements as lambda.CfnCapacityProvider.InstanceRequirementsProperty)
    .architectures;
  if (architectures === undefined || Token.isUnresolved(architectures)) return undefined;
  return architectures;
}

/**
 * Attaches `handler` to the capacity provider: the function's `CapacityProviderConfig`, as
 * `lambda.CapacityProvider.addFunction` writes it, for a provider of this app or an imported one
 * alike (the imported interface has no `addFunction`).
 */
export function attachToCapacityProvider(handler: lambda.Function, options: ManagedInstances): void {
  const resource = handler.node.defaultChild as lambda.CfnFunction;
  resource.capacityProviderConfig = {
    lambdaManagedInstancesCapacityProviderConfig: {
      capacityProviderArn: options.capacityProvider.capacityProviderArn,
      perExecutionEnvironmentMaxConcurrency: options.perExecutionEnvironmentMaxConcurrency,
      executionEnvironmentMemoryGiBPerVCpu: options.executionEnvironmentMemoryGiBPerVCpu,
    },
  };
}
