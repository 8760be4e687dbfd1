/**
 * The example CDK app as the main job and the end-to-end test deploy it: the stack of
 * `bin/app.ts` (the `ExampleStack`, checked by cdk-nag's AwsSolutions and Serverless packs at
 * synth time), with its name taken from the `exampleStackName` context so that several
 * deployments can share one emulator. `-c local=true` shapes it for the emulator.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { ExampleStack } from '../../lib/example-stack';

const app = new App();
const local = ['true', true].includes(app.node.tryGetContext('local'));
const stackName: unknown = app.node.tryGetContext('exampleStackName');

new ExampleStack(app, 'EffectivelyOnceExample', {
  local,
  ...(typeof stackName === 'string' && stackName !== '' ? { stackName } : {}),
  description: 'effectively-once example: idempotent SQS → Lambda → DynamoDB consumers',
});

Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));
