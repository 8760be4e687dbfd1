import * as path from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { describe, expect, it } from 'vitest';
import {
  IdempotentConsumer,
  type IdempotentConsumerProps,
  IdempotentStreamConsumer,
  type IdempotentStreamConsumerProps,
  type ManagedInstances,
} from '../../lib';
import { FIXTURE_ENTRY, logicalId, newStack } from './support';

const PROVIDER_ARN = 'arn:aws:lambda:eu-west-1:123456789012:capacity-provider:consumers';

type ProviderFactory = (stack: ReturnType<typeof newStack>['stack']) => lambda.ICapacityProvider;

/**
 * A consumer on managed instances in a fresh stack, with `options` next to the capacity provider
 * (an imported one unless `provider` creates one).
 */
function build(
  props: Partial<IdempotentConsumerProps> = {},
  provider?: ProviderFactory,
  options: Omit<ManagedInstances, 'capacityProvider'> = {},
) {
  const { stack } = newStack();
  const capacityProvider =
    provider?.(stack) ?? lambda.CapacityProvider.fromCapacityProviderArn(stack, 'Provider', PROVIDER_ARN);
  const consumer = new IdempotentConsumer(stack, 'Consumer', {
    mode: 'two-phase',
    entry: FIXTURE_ENTRY,
    managedInstances: { capacityProvider, ...options },
    ...props,
  } as IdempotentConsumerProps);
  return { stack, consumer, template: Template.fromStack(stack) };
}

function functionOf(template: Template, consumer: IdempotentConsumer) {
  return template.findResources('AWS::Lambda::Function')[logicalId(consumer.handler)]!.Properties;
}

/** A capacity provider of this app that launches only `architectures`. */
const providerLaunching =
  (...architectures: lambda.Architecture[]): ProviderFactory =>
  (stack) =>
    new lambda.CapacityProvider(stack, 'Provider', {
      subnets: [ec2.Subnet.fromSubnetId(stack, 'Subnet', 'subnet-0123456789abcdef0')],
      securityGroups: [ec2.SecurityGroup.fromSecurityGroupId(stack, 'Group', 'sg-0123456789abcdef0')],
      architectures,
    });

describe('IdempotentConsumer on Lambda Managed Instances', () => {
  it('attaches the created function to the capacity provider with 2048 MiB by default', () => {
    const { template, consumer } = build({}, undefined, {
      perExecutionEnvironmentMaxConcurrency: 32,
      executionEnvironmentMemoryGiBPerVCpu: 4,
    });
    const properties = functionOf(template, consumer);
    expect(properties.CapacityProviderConfig).toEqual({
      LambdaManagedInstancesCapacityProviderConfig: {
        CapacityProviderArn: PROVIDER_ARN,
        PerExecutionEnvironmentMaxConcurrency: 32,
        ExecutionEnvironmentMemoryGiBPerVCpu: 4,
      },
    });
    expect(properties.MemorySize).toBe(2048);
    expect(properties.Runtime).toBe('nodejs24.x');
    expect(properties.Architectures).toEqual(['arm64']);
  });

  it('names a capacity provider of this app by its ARN and keeps a memory size the user set', () => {
    const { template, consumer, stack } = build(
      { memorySize: 4096 },
      providerLaunching(lambda.Architecture.ARM_64),
    );
    const provider = stack.node.findChild('Provider') as lambda.CapacityProvider;
    const properties = functionOf(template, consumer);
    expect(properties.CapacityProviderConfig).toEqual({
      LambdaManagedInstancesCapacityProviderConfig: {
        CapacityProviderArn: { 'Fn::GetAtt': [logicalId(provider), 'Arn'] },
      },
    });
    expect(properties.MemorySize).toBe(4096);
  });

  it('leaves a consumer without managedInstances on default compute with 256 MiB', () => {
    const { stack } = newStack();
    const consumer = new IdempotentConsumer(stack, 'Consumer', { mode: 'marker', entry: FIXTURE_ENTRY });
    const properties = functionOf(Template.fromStack(stack), consumer);
    expect(properties.CapacityProviderConfig).toBeUndefined();
    expect(properties.MemorySize).toBe(256);
  });

  it('refuses what Lambda refuses on managed instances, every failure at once', () => {
    expect(() =>
      build({ memorySize: 1024, runtime: lambda.Runtime.NODEJS_20_X }, undefined, {
        perExecutionEnvironmentMaxConcurrency: 1601,
        executionEnvironmentMemoryGiBPerVCpu: 1.5,
      }),
    ).toThrow(
      [
        '4 problems with the props of IdempotentConsumer:',
        '- Expected `memorySize` to be at least 2048 with `managedInstances` (Lambda Managed Instances run functions of 2 GB and more), got `1024`',
        '- Expected `runtime` to be Node.js 22 or later with `managedInstances`, got `nodejs20.x`',
        '- Expected `managedInstances.perExecutionEnvironmentMaxConcurrency` to be an integer from 1 to 1600, got `1601`',
        '- Expected `managedInstances.executionEnvironmentMemoryGiBPerVCpu` to be a number from 2 to 8, got `1.5`',
      ].join('\n'),
    );
  });

  it('refuses a fractional or zero concurrency per execution environment', () => {
    for (const value of [0, 2.5]) {
      expect(() => build({}, undefined, { perExecutionEnvironmentMaxConcurrency: value })).toThrow(
        `Expected \`managedInstances.perExecutionEnvironmentMaxConcurrency\` to be an integer from 1 to 1600, got \`${value}\``,
      );
    }
  });

  it('refuses an architecture the capacity provider of this app does not launch', () => {
    expect(() => build({}, providerLaunching(lambda.Architecture.X86_64))).toThrow(
      'Expected `architecture` to be one the capacity provider launches (x86_64), got `arm64`',
    );
    const { template, consumer } = build(
      { architecture: lambda.Architecture.X86_64 },
      providerLaunching(lambda.Architecture.X86_64),
    );
    expect(functionOf(template, consumer).Architectures).toEqual(['x86_64']);
  });

  it('refuses managedInstances with a given handler, which its owner attaches', () => {
    const { stack } = newStack();
    const handler = lambda.Function.fromFunctionArn(
      stack,
      'Given',
      'arn:aws:lambda:eu-west-1:123456789012:function:given',
    );
    expect(
      () =>
        new IdempotentConsumer(stack, 'Consumer', {
          mode: 'marker',
          handler,
          managedInstances: {
            capacityProvider: lambda.CapacityProvider.fromCapacityProviderArn(
              stack,
              'Provider',
              PROVIDER_ARN,
            ),
          },
        }),
    ).toThrow('Expected no `managedInstances` with a given `handler`: configure your function');
  });
});

describe('IdempotentStreamConsumer on Lambda Managed Instances', () => {
  const streamConsumer = (props: Partial<IdempotentStreamConsumerProps>) => {
    const { stack } = newStack();
    const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: path.join(__dirname, 'fixtures', 'stream-handler.ts'),
      stream: new kinesis.Stream(stack, 'Orders', { encryption: kinesis.StreamEncryption.MANAGED }),
      managedInstances: {
        capacityProvider: lambda.CapacityProvider.fromCapacityProviderArn(stack, 'Provider', PROVIDER_ARN),
      },
      ...props,
    });
    return { consumer, template: Template.fromStack(stack) };
  };

  it('attaches the created function to the capacity provider with 2048 MiB by default', () => {
    const { consumer, template } = streamConsumer({});
    const properties =
      template.findResources('AWS::Lambda::Function')[logicalId(consumer.handler)]!.Properties;

    expect(properties.CapacityProviderConfig).toEqual({
      LambdaManagedInstancesCapacityProviderConfig: { CapacityProviderArn: PROVIDER_ARN },
    });
    expect(properties.MemorySize).toBe(2048);
  });

  it('refuses what Lambda refuses on managed instances', () => {
    expect(() => streamConsumer({ memorySize: 512 })).toThrow(
      'Expected `memorySize` to be at least 2048 with `managedInstances` (Lambda Managed Instances run functions of 2 GB and more), got `512`',
    );
  });
});
