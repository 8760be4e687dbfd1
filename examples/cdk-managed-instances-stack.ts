/**
 * The consumer construct on Lambda Managed Instances: a VPC with private subnets (flow logs on),
 * a security group, a capacity provider of this app launching Arm instances, and the two-phase
 * refund consumer (`examples/sqs-two-phase.ts`) attached to it, 64 invocations at once per
 * execution environment, its completed-record cache shared by them. cdk-nag's two packs check the
 * result at synth time.
 *
 * Synthesize it with `npx cdk synth --app "npx tsx examples/cdk-managed-instances-stack.ts"`.
 */
import * as path from 'node:path';
import { App, CfnOutput, Stack, type StackProps, Validations } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import type { Construct } from 'constructs';
import { IdempotentConsumer } from 'effectively-once/construct';

export class PaymentsOnManagedInstancesStack extends Stack {
  constructor(scope: Construct, id: string, props?: StackProps) {
    super(scope, id, props);
    const vpc = new ec2.Vpc(this, 'Vpc', {
      maxAzs: 2,
      subnetConfiguration: [
        { name: 'public', subnetType: ec2.SubnetType.PUBLIC },
        { name: 'instances', subnetType: ec2.SubnetType.PRIVATE_WITH_EGRESS },
      ],
      flowLogs: { all: { trafficType: ec2.FlowLogTrafficType.ALL } },
    });
    const instances = new ec2.SecurityGroup(this, 'Instances', {
      vpc,
      description: 'Lambda Managed Instances of the payments consumer: outbound only',
    });
    const capacityProvider = new lambda.CapacityProvider(this, 'Capacity', {
      subnets: vpc.privateSubnets,
      securityGroups: [instances],
      architectures: [lambda.Architecture.ARM_64],
    });
    // The role Lambda assumes to launch and manage the instances carries the managed policy AWS
    // names for it ("at minimum, the role requires the permissions in the
    // AWSLambdaManagedEC2ResourceOperator managed policy", Lambda operator role for Lambda Managed
    // Instances); cdk-nag flags every AWS managed policy, so the finding is acknowledged.
    Validations.of(capacityProvider).acknowledge({
      id: 'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/AWSLambdaManagedEC2ResourceOperator]',
      reason:
        "The capacity provider's operator role uses AWSLambdaManagedEC2ResourceOperator, the managed policy AWS documents for Lambda Managed Instances to launch and manage its EC2 instances.",
    });

    const consumer = new IdempotentConsumer(this, 'Payments', {
      mode: 'two-phase',
      entry: path.join(__dirname, 'sqs-two-phase.ts'),
      consumerName: 'payments',
      // The capacity provider launches Arm instances only: the function is built for them.
      architecture: lambda.Architecture.ARM_64,
      completedCacheMaxEntries: 1000,
      managedInstances: { capacityProvider, perExecutionEnvironmentMaxConcurrency: 64 },
      environment: { PAYMENTS_URL: 'https://payments.example.com' },
    });

    new CfnOutput(this, 'QueueUrl', { value: consumer.queue.queueUrl });
  }
}

const app = new App();
new PaymentsOnManagedInstancesStack(app, 'PaymentsOnManagedInstancesStack');
// A finding of either pack fails the synth.
Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
