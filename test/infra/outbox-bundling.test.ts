import childProcess from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { App, AssetStaging, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as events from 'aws-cdk-lib/aws-events';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { OUTBOX_ENV } from '../../lambda/core/contract';
import { Outbox } from '../../lib';
import { logicalId, SHARED_OUTDIR } from './support';

const RELAY_FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'outbox-relay.ts');

describe('Outbox relay bundling', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('bundles the relay as the consumer constructs do: local esbuild, minified CommonJS with a source map, nothing external, never Docker', () => {
    // A cleared cache forces a real bundle in this test.
    AssetStaging.clearAssetHashCache();
    const spawnSync = vi.spyOn(childProcess, 'spawnSync');
    const app = new App({ outdir: SHARED_OUTDIR, builtinCloudFormationValidation: false });
    const stack = new Stack(app, 'OutboxBundlingStack');
    const outbox = new Outbox(stack, 'Outbox', {
      relayEntry: RELAY_FIXTURE_ENTRY,
      queue: new sqs.Queue(stack, 'Shipping'),
    });

    const commands = spawnSync.mock.calls.map(([command, args]) => [command, ...((args as string[]) ?? [])]);
    expect(commands.some(([command]) => command === 'docker')).toBe(false);
    const esbuild = commands.find((command) => command.includes('esbuild') && command.includes('--bundle'));
    expect(esbuild).toEqual(
      expect.arrayContaining([
        '--format=cjs',
        '--minify',
        '--sourcemap',
        '--platform=node',
        '--target=node24',
      ]),
    );
    expect(esbuild!.filter((arg) => arg.startsWith('--external'))).toEqual([]);

    const assembly = app.synth();
    const code =
      Template.fromStack(stack).findResources('AWS::Lambda::Function')[logicalId(outbox.relay)]?.Properties
        .Code;
    const assetDir = path.join(assembly.directory, `asset.${String(code.S3Key).replace(/\.zip$/, '')}`);
    expect(fs.readdirSync(assetDir).sort()).toEqual(['index.js', 'index.js.map']);
    expect(fs.readFileSync(path.join(assetDir, 'index.js'), 'utf8')).toContain('batchItemFailures');
  });

  it("bundles the package's relay handler when no relayEntry is given: createOutboxRelay with its environment defaults", () => {
    AssetStaging.clearAssetHashCache();
    const app = new App({ outdir: SHARED_OUTDIR, builtinCloudFormationValidation: false });
    const stack = new Stack(app, 'OutboxDefaultRelayStack');
    const outbox = new Outbox(stack, 'Outbox', { eventBus: new events.EventBus(stack, 'Bus') });

    const assembly = app.synth();
    const code =
      Template.fromStack(stack).findResources('AWS::Lambda::Function')[logicalId(outbox.relay)]?.Properties
        .Code;
    const assetDir = path.join(assembly.directory, `asset.${String(code.S3Key).replace(/\.zip$/, '')}`);
    const bundle = fs.readFileSync(path.join(assetDir, 'index.js'), 'utf8');
    // The relay's own log line, the variables it reads and each destination's SDK command.
    expect(bundle).toContain('Outbox relay: publish failed');
    for (const name of [
      OUTBOX_ENV.destinationKind,
      OUTBOX_ENV.destinationArn,
      OUTBOX_ENV.destinationQueueUrl,
      OUTBOX_ENV.eventSource,
    ]) {
      expect(bundle).toContain(name);
    }
    for (const operation of ['PutEvents', 'Publish', 'SendMessage']) {
      expect(bundle).toContain(`"${operation}"`);
    }
  });
});
