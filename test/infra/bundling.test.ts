import childProcess from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { App, AssetStaging, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { IdempotentConsumer } from '../../lib';
import { FIXTURE_ENTRY, logicalId, SHARED_OUTDIR } from './support';

describe('IdempotentConsumer bundling', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('bundles the entry with the local esbuild as minified CommonJS with a source map and the AWS SDK inside, never Docker', () => {
    // A cleared cache forces a real bundle in this test.
    AssetStaging.clearAssetHashCache();
    const spawnSync = vi.spyOn(childProcess, 'spawnSync');
    const app = new App({ outdir: SHARED_OUTDIR, builtinCloudFormationValidation: false });
    const stack = new Stack(app, 'BundlingStack');
    const consumer = new IdempotentConsumer(stack, 'Consumer', { mode: 'marker', entry: FIXTURE_ENTRY });

    const commands = spawnSync.mock.calls.map(([command, args]) => [command, ...((args as string[]) ?? [])]);
    expect(commands.some(([command]) => command === 'docker')).toBe(false);
    const esbuild = commands.find((command) => command.includes('esbuild') && command.includes('--bundle'));
    expect(esbuild).toBeDefined();
    expect(esbuild).toEqual(
      expect.arrayContaining([
        '--format=cjs',
        '--minify',
        '--sourcemap',
        '--platform=node',
        '--target=node24',
      ]),
    );
    // `externalModules: []`: nothing is left out of the bundle, the AWS SDK included.
    expect(esbuild!.filter((arg) => arg.startsWith('--external'))).toEqual([]);

    const assembly = app.synth();
    const code =
      Template.fromStack(stack).findResources('AWS::Lambda::Function')[logicalId(consumer.handler)]
        ?.Properties.Code;
    const assetDir = path.join(assembly.directory, `asset.${String(code.S3Key).replace(/\.zip$/, '')}`);
    expect(fs.readdirSync(assetDir).sort()).toEqual(['index.js', 'index.js.map']);
  });

  it('puts the AWS SDK into the bundle instead of relying on the runtime copy', () => {
    const app = new App({ outdir: SHARED_OUTDIR, builtinCloudFormationValidation: false });
    const stack = new Stack(app, 'SdkStack');
    const consumer = new IdempotentConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: path.join(__dirname, 'fixtures', 'sdk-handler.ts'),
    });
    const assembly = app.synth();
    const code =
      Template.fromStack(stack).findResources('AWS::Lambda::Function')[logicalId(consumer.handler)]
        ?.Properties.Code;
    const bundle = fs.readFileSync(
      path.join(assembly.directory, `asset.${String(code.S3Key).replace(/\.zip$/, '')}`, 'index.js'),
      'utf8',
    );
    // Only the SDK's optional native signer stays a guarded runtime require.
    const requires = [...new Set(bundle.match(/require\("@(aws-sdk|smithy)\/[^"]+"\)/g) ?? [])];
    expect(requires).toEqual(['require("@aws-sdk/signature-v4-crt")']);
    expect(bundle.includes('GetQueueUrlCommand')).toBe(true);
    expect(bundle.length).toBeGreaterThan(100_000);
  });
});
