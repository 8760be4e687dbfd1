import childProcess from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { App, AssetStaging, Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import * as kinesis from 'aws-cdk-lib/aws-kinesis';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { IdempotentStreamConsumer } from '../../lib';
import { logicalId, SHARED_OUTDIR } from './support';

const STREAM_FIXTURE_ENTRY = path.join(__dirname, 'fixtures', 'stream-handler.ts');

describe('IdempotentStreamConsumer bundling', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('bundles the entry as the SQS construct does: local esbuild, minified CommonJS with a source map, nothing external, never Docker', () => {
    // A cleared cache forces a real bundle in this test.
    AssetStaging.clearAssetHashCache();
    const spawnSync = vi.spyOn(childProcess, 'spawnSync');
    const app = new App({ outdir: SHARED_OUTDIR, builtinCloudFormationValidation: false });
    const stack = new Stack(app, 'StreamBundlingStack');
    const consumer = new IdempotentStreamConsumer(stack, 'Consumer', {
      mode: 'marker',
      entry: STREAM_FIXTURE_ENTRY,
      stream: new kinesis.Stream(stack, 'Events'),
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
      Template.fromStack(stack).findResources('AWS::Lambda::Function')[logicalId(consumer.handler)]
        ?.Properties.Code;
    const assetDir = path.join(assembly.directory, `asset.${String(code.S3Key).replace(/\.zip$/, '')}`);
    expect(fs.readdirSync(assetDir).sort()).toEqual(['index.js', 'index.js.map']);
    expect(fs.readFileSync(path.join(assetDir, 'index.js'), 'utf8')).toContain('batchItemFailures');
  });
});
