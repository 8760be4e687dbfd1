/**
 * The example CDK app (`cdk.json` runs it). `cdk synth -c local=true` shapes the stack for the
 * local emulator (see `ExampleStack`). cdk-nag's AwsSolutions and Serverless packs run at
 * synth time; a finding fails the synth.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { ExampleStack } from '../lib/example-stack';

const app = new App();
const local = ['true', true].includes(app.node.tryGetContext('local'));

new ExampleStack(app, 'EffectivelyOnceExample', {
  local,
  description: 'effectively-once example: idempotent SQS → Lambda → DynamoDB consumers',
});

Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
