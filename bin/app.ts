/**
 * The example CDK app (`cdk.json` runs it; so do `npm start`, `npm run deploy:local` and the
 * end-to-end test). cdk-nag's AwsSolutions and Serverless packs run at synth time; a finding
 * fails the synth.
 *
 * Context values:
 * - `local=true` shapes the stack for the local emulator (see `ExampleStack`) and publishes its
 *   assets with the caller's credentials (`CliCredentialsStackSynthesizer`);
 * - `downstreamUrl` is the base URL the payment notifier posts to. On AWS, set it to a real
 *   endpoint that deduplicates on `Idempotency-Key`; without it the stack uses a placeholder
 *   that never resolves (and warns);
 * - `exampleStackName` deploys the stack under another name, so several deployments can share
 *   one emulator (the construct id, and so every logical id, stays the same).
 *
 * @example
 * npx cdk deploy -c downstreamUrl=https://notifications.example.com
 */
import { App, CliCredentialsStackSynthesizer, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks, ServerlessChecks } from 'cdk-nag';
import { ExampleStack } from '../lib/example/example-stack';

const app = new App();
const local = ['true', true].includes(app.node.tryGetContext('local'));
const downstreamUrl = optionalText(app.node.tryGetContext('downstreamUrl'));
const stackName = optionalText(app.node.tryGetContext('exampleStackName'));

new ExampleStack(app, 'EffectivelyOnceExample', {
  local,
  ...(downstreamUrl === undefined ? {} : { downstreamUrl }),
  ...(stackName === undefined ? {} : { stackName }),
  // Locally, assets are published with the caller's credentials: an emulator that enforces IAM
  // denies the bootstrap roles' publishing (see README, Local AWS).
  ...(local ? { synthesizer: new CliCredentialsStackSynthesizer() } : {}),
  description:
    'effectively-once example: idempotent SQS → Lambda → DynamoDB consumers, chained through a transactional outbox',
});

Validations.of(app).addPlugins(new AwsSolutionsChecks(app), new ServerlessChecks(app));

/** A context value that is a non-empty string, else `undefined`. */
function optionalText(value: unknown): string | undefined {
  return typeof value === 'string' && value !== '' ? value : undefined;
}
