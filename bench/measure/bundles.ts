/**
 * Handler bundle sizes and module init time. Each implementation's deployable handler (the
 * entry a user would write: clients at module scope, tables from the environment, the
 * library's default logging) is bundled with esbuild for Node 20, minified, once with the AWS
 * SDK inside (what a Lambda zip holds; see LOCAL-AWS.md) and once with the SDK external. The
 * toolkit's own runtime code is `lambda/index.ts` bundled with the SDK external. Init time is
 * the time to `require` the SDK-inclusive bundle in a fresh `node` process.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from 'esbuild';
import type { Implementation } from '../implementations';
import { TOOLKIT_HANDLERS } from '../implementations/toolkit';
import { TABLE_ENV } from '../workload';

const BENCH_DIR = resolve(__dirname, '..');
const ROOT = resolve(BENCH_DIR, '..');
const SDK_EXTERNAL = ['@aws-sdk/*', '@smithy/*', '@aws-crypto/*'];

/** Sizes of one bundle, bytes. */
export interface BundleSize {
  readonly minified: number;
  readonly gzip: number;
}

/** Sizes of an implementation's handler bundle. */
export interface HandlerBundle {
  /** With the AWS SDK bundled in. */
  readonly withSdk: BundleSize;
  /** With the AWS SDK external (the library and handler code only). */
  readonly withoutSdk: BundleSize;
  /** The minified SDK-inclusive bundle, for the init-time measurement. */
  readonly code: Uint8Array;
}

/** The source of the deployable handler of `implementation`, as a user would write it. */
export function entrySource(implementation: Implementation): string {
  const clients = [
    "import { DynamoDBClient } from '@aws-sdk/client-dynamodb';",
    "import { documentClient } from './implementations/document-client';",
    "import { tablesFromEnv } from './workload';",
  ];
  switch (implementation.kind) {
    case 'bare':
      return [
        ...clients,
        "import { createBareHandler } from './implementations/bare';",
        'export const handler = createBareHandler(documentClient(new DynamoDBClient({})), tablesFromEnv());',
      ].join('\n');
    case 'powertools':
      return [
        ...clients,
        "import { createPowertoolsHandler } from './implementations/powertools';",
        'const persistence = new DynamoDBClient({});',
        'export const handler = createPowertoolsHandler(',
        '  { persistence, business: documentClient(persistence) },',
        '  tablesFromEnv(),',
        `  ${JSON.stringify(implementation.powertools ?? {})},`,
        ');',
      ].join('\n');
    case 'toolkit': {
      // The mode's own module: the bundle carries that one mode, as a user's handler does.
      const { module, factory } = TOOLKIT_HANDLERS[implementation.mode!];
      return [
        ...clients,
        `import { ${factory} } from './implementations/${module.replace(/^\.\//, '')}';`,
        'const client = documentClient(new DynamoDBClient({}));',
        `export const handler = ${factory}({ toolkit: client, business: client }, tablesFromEnv(), false);`,
      ].join('\n');
    }
    case 'hand-written':
      return [
        ...clients,
        "import { createHandWrittenHandler } from './implementations/hand-written';",
        `export const handler = createHandWrittenHandler(${JSON.stringify(implementation.handWritten)}, documentClient(new DynamoDBClient({})), tablesFromEnv());`,
      ].join('\n');
  }
}

async function bundleWithInputs(
  input: { readonly contents: string } | { readonly entry: string },
  external: readonly string[],
): Promise<{ readonly code: Uint8Array; readonly inputs: Readonly<Record<string, number>> }> {
  const result = await build({
    ...('entry' in input
      ? { entryPoints: [input.entry] }
      : {
          stdin: { contents: input.contents, resolveDir: BENCH_DIR, sourcefile: 'handler.ts', loader: 'ts' },
        }),
    bundle: true,
    minify: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    write: false,
    logLevel: 'silent',
    legalComments: 'none',
    metafile: true,
    external: [...external],
  });
  const output = Object.values(result.metafile.outputs)[0];
  const inputs: Record<string, number> = {};
  for (const [file, { bytesInOutput }] of Object.entries(output?.inputs ?? {})) inputs[file] = bytesInOutput;
  return { code: result.outputFiles[0]!.contents, inputs };
}

async function bundle(
  input: { readonly contents: string } | { readonly entry: string },
  external: readonly string[],
): Promise<Uint8Array> {
  return (await bundleWithInputs(input, external)).code;
}

function sizeOf(code: Uint8Array): BundleSize {
  return { minified: code.byteLength, gzip: gzipSync(code, { level: 9 }).byteLength };
}

/** Bundles the handler of `implementation` with and without the AWS SDK. */
export async function bundleHandler(implementation: Implementation): Promise<HandlerBundle> {
  const contents = entrySource(implementation);
  const code = await bundle({ contents }, []);
  return { withSdk: sizeOf(code), withoutSdk: sizeOf(await bundle({ contents }, SDK_EXTERNAL)), code };
}

/** The toolkit's own runtime bundle, and the minified bytes each source file contributes. */
export interface RuntimeBundle extends BundleSize {
  /** Source files by minified bytes in the bundle, largest first. */
  readonly files: readonly { readonly file: string; readonly bytes: number }[];
}

/** The toolkit's own runtime code: the package root, every entry point, AWS SDK external. */
export async function bundleToolkitRuntime(): Promise<RuntimeBundle> {
  const { code, inputs } = await bundleWithInputs({ entry: join(ROOT, 'lambda', 'index.ts') }, [
    ...SDK_EXTERNAL,
    '@middy/*',
  ]);
  const files = Object.entries(inputs)
    .map(([file, bytes]) => ({ file, bytes }))
    .sort((a, b) => b.bytes - a.bytes);
  return { ...sizeOf(code), files };
}

const REQUIRE_SCRIPT =
  'const t=process.hrtime.bigint();require(process.argv[1]);' +
  'process.stdout.write(String(Number(process.hrtime.bigint()-t)/1e6))';

function requireMillis(file: string): Promise<number> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, ['-e', REQUIRE_SCRIPT, file], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: {
        PATH: process.env.PATH ?? '',
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'AKIDBENCHMARK',
        AWS_SECRET_ACCESS_KEY: 'bench-secret',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
        [TABLE_ENV.inbox]: 'bench-inbox',
        [TABLE_ENV.orders]: 'bench-orders',
        [TABLE_ENV.powertools]: 'bench-idempotency',
      },
    });
    let output = '';
    let errors = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      errors += chunk.toString();
    });
    child.once('error', fail);
    child.once('close', (code) => {
      const millis = Number(output);
      if (code === 0 && Number.isFinite(millis)) done(millis);
      else fail(new Error(`Requiring ${file} failed (exit ${code}): ${errors.trim()}`));
    });
  });
}

/** A directory of bundles to require, removed by `dispose()`. */
export interface InitTimer {
  /** Requires the bundle of `id` in a fresh process, milliseconds. */
  measure(id: string): Promise<number>;
  dispose(): void;
}

/** Writes the bundles to a temporary directory for init-time measurements. */
export function createInitTimer(bundles: ReadonlyMap<string, HandlerBundle>): InitTimer {
  const dir = mkdtempSync(join(tmpdir(), 'effectively-once-bench-'));
  const files = new Map<string, string>();
  for (const [id, handlerBundle] of bundles) {
    const file = join(dir, `${id}.js`);
    writeFileSync(file, handlerBundle.code);
    files.set(id, file);
  }
  return {
    measure: (id) => requireMillis(files.get(id)!),
    dispose: () => rmSync(dir, { recursive: true, force: true }),
  };
}
