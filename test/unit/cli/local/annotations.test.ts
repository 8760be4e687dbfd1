import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  annotationsOfManifest,
  formatAnnotation,
  readSynthAnnotations,
} from '../../../../cli/local/annotations';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const TTL_WARNING =
  'recordTtl (3 days) is shorter than the redelivery window (32 days): a message redelivered or ' +
  'redriven after its inbox record expired is processed again [ack: effectively-once:recordTtl]';

const manifest = {
  artifacts: {
    Tree: { type: 'cdk:tree' },
    Shop: {
      type: 'aws:cloudformation:stack',
      metadata: {
        '/Shop/Orders/Consumer': [
          { type: 'aws:cdk:warning', data: TTL_WARNING },
          { type: 'aws:cdk:logicalId', data: 'OrdersConsumer12AB' },
          { type: 'aws:cdk:info', data: 'an info line is not shown' },
        ],
        '/Shop/Orders/Queue': [{ type: 'aws:cdk:error', data: 'queue retention too short\n' }],
      },
    },
    'Shop.assets': {
      type: 'cdk:asset-manifest',
      // The same warning attached twice (a stack and its asset manifest) is shown once.
      metadata: { '/Shop/Orders/Consumer': [{ type: 'aws:cdk:warning', data: TTL_WARNING }] },
    },
  },
};

describe('annotationsOfManifest', () => {
  it('gives each warning and error of the app once, errors first, and no other metadata', () => {
    expect(annotationsOfManifest(manifest)).toEqual([
      { level: 'error', path: '/Shop/Orders/Queue', message: 'queue retention too short' },
      { level: 'warning', path: '/Shop/Orders/Consumer', message: TTL_WARNING },
    ]);
  });

  it('formats each as the CDK CLI does', () => {
    expect(annotationsOfManifest(manifest).map(formatAnnotation)).toEqual([
      '[Error at /Shop/Orders/Queue] queue retention too short',
      `[Warning at /Shop/Orders/Consumer] ${TTL_WARNING}`,
    ]);
  });
});

describe('readSynthAnnotations', () => {
  function assembly(): string {
    const dir = mkdtempSync(join(tmpdir(), 'eo-annotations-'));
    dirs.push(dir);
    mkdirSync(join(dir, 'assembly-Prod'));
    writeFileSync(
      join(dir, 'manifest.json'),
      JSON.stringify({
        artifacts: {
          'assembly-Prod': { type: 'cdk:cloud-assembly', properties: { directoryName: 'assembly-Prod' } },
        },
      }),
    );
    // As recent CDK versions write it: the stack's metadata in a file of its own.
    writeFileSync(
      join(dir, 'assembly-Prod', 'manifest.json'),
      JSON.stringify({
        artifacts: {
          Shop: { type: 'aws:cloudformation:stack', additionalMetadataFile: 'Shop.metadata.json' },
        },
      }),
    );
    writeFileSync(
      join(dir, 'assembly-Prod', 'Shop.metadata.json'),
      JSON.stringify(manifest.artifacts.Shop.metadata),
    );
    return dir;
  }

  it('reads the metadata files of the stacks of nested assemblies (stages)', () => {
    expect(readSynthAnnotations(assembly()).map((annotation) => annotation.level)).toEqual([
      'error',
      'warning',
    ]);
  });

  it('reads nothing from an assembly older than this run, or from no assembly', () => {
    const dir = assembly();
    const anHourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(join(dir, 'manifest.json'), anHourAgo, anHourAgo);
    expect(readSynthAnnotations(dir, Date.now() - 60_000)).toEqual([]);
    expect(readSynthAnnotations(join(dir, 'missing'))).toEqual([]);
  });
});
