/**
 * The managed-instances construct sample (`examples/cdk-managed-instances-stack.ts`, shown in
 * docs/construct.md) as written: synthesized in a fresh app, the function attached to the app's
 * capacity provider with the sample's settings, and nothing found by cdk-nag's AwsSolutions and
 * Serverless packs. It is not deployed: the local emulator runs no capacity provider.
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { PaymentsOnManagedInstancesStack } from '../../examples/cdk-managed-instances-stack';
import { nagFindings } from './support';

describe('the managed-instances construct sample', () => {
  const app = new App();
  const stack = new PaymentsOnManagedInstancesStack(app, 'PaymentsOnManagedInstancesStack');
  const template = Template.fromStack(stack);

  it("attaches the consumer's function to the app's capacity provider: Arm, 2048 MiB, 64 invocations at once", () => {
    const providers = template.findResources('AWS::Lambda::CapacityProvider');
    expect(Object.keys(providers)).toHaveLength(1);
    const [providerId] = Object.keys(providers);
    const functions = Object.values(template.findResources('AWS::Lambda::Function')).filter(
      (resource) => resource.Properties.CapacityProviderConfig !== undefined,
    );
    expect(functions).toHaveLength(1);
    expect(functions[0]!.Properties).toMatchObject({
      Architectures: ['arm64'],
      MemorySize: 2048,
      CapacityProviderConfig: {
        LambdaManagedInstancesCapacityProviderConfig: {
          CapacityProviderArn: { 'Fn::GetAtt': [providerId, 'Arn'] },
          PerExecutionEnvironmentMaxConcurrency: 64,
        },
      },
    });
    expect(functions[0]!.Properties.Environment.Variables).toMatchObject({
      EO_CONSUMER: 'payments',
      EO_COMPLETED_CACHE_MAX_ENTRIES: '1000',
    });
  });

  it('passes cdk-nag with nothing unacknowledged', () => {
    expect(nagFindings(app)).toEqual([]);
  });
});
