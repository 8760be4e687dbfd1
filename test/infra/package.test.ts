/**
 * The package as a user installs it: `npm pack` (whose `prepack` builds `dist/`), the tarball
 * unpacked into `node_modules/effectively-once` of a directory under `.local/` (inside the
 * repository, so the package's dependencies and optional peers resolve from the repository's
 * `node_modules`), then every subpath loaded by a child `node` and type-checked by `tsc` as a
 * consumer's code would be.
 */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');
const run = promisify(execFile);
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));

interface Conditions {
  readonly types: string;
  readonly default: string;
}
const manifest = readJson(join(root, 'package.json')) as {
  readonly exports: Record<string, Conditions | string>;
  readonly typesVersions: Record<string, Record<string, string[]>>;
  readonly bin: Record<string, string>;
  readonly dependencies: Record<string, string>;
  readonly peerDependencies: Record<string, string>;
  readonly peerDependenciesMeta: Record<string, { readonly optional: boolean }>;
};
/** The exported subpaths with their conditions, `./package.json` left out. */
const subpaths = Object.entries(manifest.exports).flatMap(([subpath, target]) =>
  typeof target === 'string' ? [] : [{ subpath, ...target }],
);
const specifierOf = (subpath: string) => `effectively-once${subpath.slice(1)}`;

/** Names each subpath must export at runtime. */
const KEY_EXPORTS: Record<string, readonly string[]> = {
  '.': ['createSqsHandler', 'createSqsMiddleware', 'createDynamoDbStore', 'fromBody', 'PermanentError'],
  './worker': ['createSqsWorker', 'createWorkerBatchHandler'],
  './http': ['createIdempotentHttpHandler', 'IDEMPOTENCY_KEY_HEADER'],
  './jobs': ['createJobGuard', 'createCheckpoint'],
  './streams': ['createKinesisHandler', 'createDynamoDbStreamHandler'],
  './kafka': ['createKafkaHandler', 'fromKafkaKey', 'fromHeader'],
  './outbox': [
    'createOutboxRelay',
    'sqsDestination',
    'eventBridgeDestination',
    'snsDestination',
    'outboxDestinationFromEnvironment',
    'createOutboxWriter',
  ],
  './construct': ['IdempotentConsumer', 'InboxTable', 'IdempotentStreamConsumer', 'Outbox'],
  './replay': ['doubleTap', 'formatDifferences'],
};

/** A consumer's code: every subpath's key exports, plus a path the `exports` map does not expose. */
const CONSUMER = `import { createSqsHandler, fromBody, PermanentError, type SqsHandler } from 'effectively-once';
import { IdempotentConsumer, IdempotentStreamConsumer, InboxTable, Outbox } from 'effectively-once/construct';
import { createIdempotentHttpHandler } from 'effectively-once/http';
import { createJobGuard } from 'effectively-once/jobs';
import { createOutboxRelay, createOutboxWriter } from 'effectively-once/outbox';
import { doubleTap } from 'effectively-once/replay';
import { createDynamoDbStreamHandler, createKinesisHandler } from 'effectively-once/streams';
import { createSqsWorker } from 'effectively-once/worker';

export const handler: (options: Parameters<typeof createSqsHandler>[0]) => SqsHandler = createSqsHandler;
export const used = [fromBody, PermanentError, IdempotentConsumer, IdempotentStreamConsumer, InboxTable, Outbox, createIdempotentHttpHandler, createJobGuard, createOutboxRelay, createOutboxWriter, doubleTap, createKinesisHandler, createDynamoDbStreamHandler, createSqsWorker];
`;
const HIDDEN = `// @ts-expect-error only the subpaths of the exports map resolve
import { createSqsHandler as hiddenHandler } from 'effectively-once/dist/lambda/sqs/sqs-handler';

export const hidden = hiddenHandler;
`;

/**
 * What a consumer on Node 20 compiles with. skipLibCheck keeps the run short (the construct's
 * declarations pull in all of aws-cdk-lib's); what the package's declarations import is checked
 * against its dependencies instead.
 */
const COMPILER_OPTIONS = {
  target: 'ES2022',
  lib: ['ES2022'],
  types: ['node'],
  strict: true,
  noEmit: true,
  skipLibCheck: true,
};

describe('the package as installed from its tarball', () => {
  let work: string;
  let installed: string;
  let tarball: string[];

  const node = (script: string, ...flags: string[]) =>
    execFileSync(process.execPath, [...flags, '-e', script], { cwd: work, encoding: 'utf8' });
  /** The diagnostics of `tsc -p project`, empty when it passes. */
  const tsc = async (project: string) => {
    const tscBin = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    try {
      await run(process.execPath, [tscBin, '-p', project, '--pretty', 'false'], { cwd: work });
      return '';
    } catch (error) {
      const { stdout, stderr } = error as { stdout: string; stderr: string };
      return `${stdout}${stderr}`;
    }
  };

  beforeAll(() => {
    mkdirSync(join(root, '.local'), { recursive: true });
    work = mkdtempSync(join(root, '.local', 'pack-check-'));
    installed = join(work, 'node_modules', 'effectively-once');
    mkdirSync(installed, { recursive: true });
    // A package of its own, so `effectively-once` is not resolved as the repository's self-reference.
    writeFileSync(join(work, 'package.json'), '{ "name": "pack-check", "private": true }\n');
    const pack = spawnSync('npm', ['pack', '--pack-destination', work], { cwd: root, encoding: 'utf8' });
    if (pack.status !== 0) throw new Error(`npm pack failed:\n${pack.stdout}${pack.stderr}`);
    const file = join(work, readdirSync(work).find((name) => name.endsWith('.tgz'))!);
    tarball = execFileSync('tar', ['-tzf', file], { encoding: 'utf8' }).trim().split('\n');
    execFileSync('tar', ['-xzf', file, '-C', installed, '--strip-components=1']);
  }, 120_000);

  afterAll(() => {
    if (work !== undefined) rmSync(work, { recursive: true, force: true });
  });

  it('maps every subpath to the source that tsconfig paths resolve it to in this repository', () => {
    const paths = readJson(join(root, 'tsconfig.json')).compilerOptions.paths as Record<string, string[]>;
    const built = readJson(join(root, 'tsconfig.build.json')).files as string[];
    const sourceOf = (types: string) => types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts');
    expect(Object.keys(KEY_EXPORTS)).toEqual(subpaths.map(({ subpath }) => subpath));
    expect(paths).toEqual(
      Object.fromEntries(
        subpaths.map(({ subpath, types }) => [specifierOf(subpath), [`./${sourceOf(types)}`]]),
      ),
    );
    expect(built).toEqual(expect.arrayContaining(subpaths.map(({ types }) => sourceOf(types))));
    expect(manifest.typesVersions).toEqual({
      '*': Object.fromEntries(
        subpaths
          .filter(({ subpath }) => subpath !== '.')
          .map(({ subpath, types }) => [subpath.slice(2), [types]]),
      ),
    });
  });

  it('ships only the compiled package: no tests, sources, local state or example app', () => {
    const unexpected = tarball.filter(
      (entry) =>
        !/^package\/(package\.json|README\.md|LICENSE|CHANGELOG\.md|dist\/.+\.(js|d\.ts))$/.test(entry),
    );
    expect(unexpected).toEqual([]);
    expect(
      tarball.filter((entry) => /(^|\/)(test|\.local|example)\/|\.test\.|example-stack/.test(entry)),
    ).toEqual([]);
  });

  it('ships the declarations and module of every subpath, the bin and the changelog', () => {
    const expected = [
      ...subpaths.flatMap(({ types, default: main }) => [types, main]),
      ...Object.values(manifest.bin),
      'CHANGELOG.md',
    ].map((file) => `package/${file.replace(/^\.\//, '')}`);
    expect(expected.filter((file) => !tarball.includes(file))).toEqual([]);
  });

  it("ships no source maps (the compiled JavaScript keeps the sources' lines and names) and no machine paths", () => {
    expect(tarball.filter((entry) => entry.endsWith('.map'))).toEqual([]);
    const mapComments = tarball.filter(
      (entry) =>
        entry.endsWith('.js') &&
        readFileSync(join(installed, entry.replace(/^package\//, '')), 'utf8').includes('sourceMappingURL'),
    );
    expect(mapComments).toEqual([]);
    const leaking = tarball.filter(
      (entry) =>
        !entry.endsWith('/') &&
        readFileSync(join(installed, entry.replace(/^package\//, '')), 'utf8').includes(root),
    );
    expect(leaking).toEqual([]);
  });

  it('declares only dependencies, optional peers and Node built-ins in its declarations', () => {
    const declared = new Set([
      ...Object.keys(manifest.dependencies),
      ...Object.keys(manifest.peerDependencies),
    ]);
    const packageOf = (specifier: string) =>
      specifier
        .split('/')
        .slice(0, specifier.startsWith('@') ? 2 : 1)
        .join('/');
    const undeclared = tarball
      .filter((entry) => entry.endsWith('.d.ts'))
      .flatMap((entry) => {
        const text = readFileSync(join(installed, entry.replace(/^package\//, '')), 'utf8').replace(
          /\/\*[\s\S]*?\*\//g,
          '',
        );
        const specifiers = [
          ...text.matchAll(/(?:from\s+|import\(\s*)['"]([^'"]+)['"]|reference types="([^"]+)"/g),
        ].map((match) => (match[1] ?? match[2])!);
        return specifiers
          .filter(
            (specifier) =>
              !specifier.startsWith('.') && !specifier.startsWith('node:') && specifier !== 'node',
          )
          .filter((specifier) => !declared.has(packageOf(specifier)))
          .map((specifier) => `${entry}: ${specifier}`);
      });
    expect(undeclared).toEqual([]);
  });

  it('loads every subpath with its key exports from the installed package, as CommonJS and as ESM', () => {
    const missing = node(`
      const key = ${JSON.stringify(KEY_EXPORTS)};
      const result = {};
      for (const [subpath, names] of Object.entries(key)) {
        const specifier = 'effectively-once' + subpath.slice(1);
        const loaded = require(specifier);
        result[subpath] = {
          file: require.resolve(specifier).startsWith(${JSON.stringify(installed)}),
          missing: names.filter((name) => loaded[name] === undefined),
        };
      }
      console.log(JSON.stringify(result));
    `);
    const esm = node(
      `${Object.entries(KEY_EXPORTS)
        .map(
          ([subpath, names], index) =>
            `import { ${names.map((name) => `${name} as e${index}_${name}`).join(', ')} } from '${specifierOf(subpath)}';`,
        )
        .join('\n')}\nconsole.log('ok');`,
      '--input-type=module',
    );
    const all = Object.fromEntries(
      Object.keys(KEY_EXPORTS).map((subpath) => [subpath, { file: true, missing: [] }]),
    );
    expect(JSON.parse(missing)).toEqual(all);
    expect(esm.trim()).toBe('ok');
  });

  it('keeps the optional peers out of the package root, and loads them from their subpaths', () => {
    const loadedPeers = (specifier: string) =>
      JSON.parse(
        node(`
          require(${JSON.stringify(specifier)});
          const peers = ${JSON.stringify(Object.keys(manifest.peerDependenciesMeta))};
          const files = Object.keys(require.cache);
          console.log(JSON.stringify(peers.filter((peer) => files.some((file) => file.includes('/node_modules/' + peer + '/')))));
        `),
      ) as string[];
    expect(loadedPeers('effectively-once')).toEqual([]);
    expect(loadedPeers('effectively-once/worker')).toEqual(['sqs-consumer']);
    expect(loadedPeers('effectively-once/construct')).toEqual(['aws-cdk-lib', 'constructs']);
  });

  it('synthesizes an Outbox without relayEntry from the installed package, bundling the compiled relay handler it ships', () => {
    expect(tarball).toContain('package/dist/lambda/outbox/relay-handler.js');
    const outdir = join(work, 'cdk.out.outbox');
    const bundles = JSON.parse(
      node(`
        const fs = require('node:fs');
        const path = require('node:path');
        const { App, Stack } = require('aws-cdk-lib');
        const sqs = require('aws-cdk-lib/aws-sqs');
        const { Outbox } = require('effectively-once/construct');
        const app = new App({ outdir: ${JSON.stringify(outdir)} });
        const stack = new Stack(app, 'UserOutbox');
        new Outbox(stack, 'OrderEvents', { queue: new sqs.Queue(stack, 'Shipping') });
        const assembly = app.synth();
        const bundles = fs
          .readdirSync(assembly.directory)
          .filter((name) => name.startsWith('asset.') && fs.existsSync(path.join(assembly.directory, name, 'index.js')))
          .map((name) => fs.readFileSync(path.join(assembly.directory, name, 'index.js'), 'utf8'));
        console.log(JSON.stringify(bundles.map((code) => code.includes('Outbox relay: publish failed'))));
      `),
    ) as boolean[];
    expect(bundles).toEqual([true]);
  }, 120_000);

  it('synthesizes a consumer on a capacity provider, a fair queue and an outbox through a topic feeding fair queues from the installed package', () => {
    const outdir = join(work, 'cdk.out.platform');
    writeFileSync(
      join(work, 'payments.js'),
      "const { createSqsHandler, fromBody, twoPhase } = require('effectively-once');\n" +
        "exports.handler = createSqsHandler({ dedupKey: fromBody('paymentId'), mode: twoPhase({ handle: async () => undefined }) });\n",
    );
    const resources = JSON.parse(
      node(`
        const path = require('node:path');
        const { App, Stack } = require('aws-cdk-lib');
        const ec2 = require('aws-cdk-lib/aws-ec2');
        const lambda = require('aws-cdk-lib/aws-lambda');
        const sns = require('aws-cdk-lib/aws-sns');
        const { IdempotentConsumer, Outbox } = require('effectively-once/construct');
        const app = new App({ outdir: ${JSON.stringify(outdir)} });
        const stack = new Stack(app, 'UserPlatform');
        const vpc = new ec2.Vpc(stack, 'Vpc', { maxAzs: 2 });
        const capacityProvider = new lambda.CapacityProvider(stack, 'Capacity', {
          subnets: vpc.privateSubnets,
          securityGroups: [new ec2.SecurityGroup(stack, 'Instances', { vpc })],
          architectures: [lambda.Architecture.ARM_64],
        });
        new IdempotentConsumer(stack, 'Payments', {
          mode: 'two-phase',
          entry: path.join(process.cwd(), 'payments.js'),
          architecture: lambda.Architecture.ARM_64,
          managedInstances: { capacityProvider, perExecutionEnvironmentMaxConcurrency: 16 },
          fairQueue: true,
        });
        const outbox = new Outbox(stack, 'OrderEvents', { topic: new sns.Topic(stack, 'Events'), fairQueue: true });
        const template = app.synth().getStackByName('UserPlatform').template;
        const functions = Object.entries(template.Resources).filter(([, r]) => r.Type === 'AWS::Lambda::Function');
        const properties = functions.map(([, r]) => r.Properties);
        const payments = properties.find((p) => p.CapacityProviderConfig !== undefined);
        const relay = properties.find((p) => p.Environment?.Variables?.EO_OUTBOX_TABLE_NAME !== undefined);
        console.log(JSON.stringify({
          capacity: payments?.CapacityProviderConfig.LambdaManagedInstancesCapacityProviderConfig.PerExecutionEnvironmentMaxConcurrency,
          groupMetrics: payments?.Environment.Variables.EO_GROUP_METRICS_MAX_GROUPS,
          relay: [relay?.Environment.Variables.EO_OUTBOX_DESTINATION_KIND, relay?.Environment.Variables.EO_OUTBOX_DESTINATION_FAIR],
          fairOnOutbox: outbox.fairQueue,
        }));
      `),
    ) as unknown;
    expect(resources).toEqual({
      capacity: 16,
      groupMetrics: '100',
      relay: ['sns', 'true'],
      fairOnOutbox: true,
    });
  }, 180_000);

  it('runs the bin', () => {
    const [bin] = Object.values(manifest.bin);
    const output = execFileSync(process.execPath, [join(installed, bin!), '--help'], { encoding: 'utf8' });
    expect(output).toMatch(/^Usage: effectively-once <command>/);
  });

  it('type-checks a consumer against the packed declarations with node16 and with classic node resolution', async () => {
    writeFileSync(join(work, 'consumer.ts'), CONSUMER + HIDDEN);
    writeFileSync(join(work, 'consumer.mts'), CONSUMER);
    writeFileSync(join(work, 'classic.ts'), CONSUMER);
    const project = (name: string, options: Record<string, unknown>, files: string[]) => {
      const compilerOptions = { ...COMPILER_OPTIONS, ...options };
      writeFileSync(join(work, name), JSON.stringify({ compilerOptions, files }));
      return name;
    };
    // node16 honours the exports map, for CommonJS and ESM consumers. The classic resolution of a
    // default CDK app's tsconfig ignores exports and finds the subpaths through typesVersions.
    const [node16, classic] = await Promise.all([
      tsc(
        project('tsconfig.node16.json', { module: 'node16', moduleResolution: 'node16' }, [
          'consumer.ts',
          'consumer.mts',
        ]),
      ),
      tsc(project('tsconfig.classic.json', { module: 'commonjs', moduleResolution: 'node' }, ['classic.ts'])),
    ]);
    expect({ node16, classic }).toEqual({ node16: '', classic: '' });
  });
});
