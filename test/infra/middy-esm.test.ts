/**
 * Pins what the README states about `@middy/core` 7 in a default `cdk init` app: its `exports` map
 * has only an `import` condition, so a `.ts` handler (CommonJS under `NodeNext` without
 * `"type": "module"`) cannot resolve it (TS2307), while a `.mts` handler can. The package here has
 * middy 7's manifest shape; the compiler options are those of the CDK's `app` template.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');
const run = promisify(execFile);

/** The compiler options of `cdk init app --language typescript` (aws-cdk 2.1148), minus jest's types. */
const CDK_INIT_COMPILER_OPTIONS = {
  target: 'ES2022',
  module: 'NodeNext',
  moduleResolution: 'NodeNext',
  lib: ['es2022'],
  strict: true,
  noEmit: true,
  isolatedModules: true,
  skipLibCheck: true,
  types: [],
};

/** The parts of `@middy/core` 7's package.json that decide resolution. */
const MIDDY_7_MANIFEST = {
  name: '@middy/core',
  version: '7.9.2',
  type: 'module',
  engines: { node: '>=22' },
  types: 'index.d.ts',
  exports: { '.': { import: { types: './index.d.ts', default: './index.js' } } },
};

const HANDLER = `import middy from '@middy/core';
export const handler = middy();
`;

describe('a handler importing @middy/core 7 in a default cdk init app', () => {
  let app: string;

  /** The diagnostics of `tsc` for one handler file, empty when it type-checks. */
  const typeCheck = async (file: string) => {
    writeFileSync(
      join(app, 'tsconfig.json'),
      JSON.stringify({ compilerOptions: CDK_INIT_COMPILER_OPTIONS, files: [file] }),
    );
    const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
    try {
      await run(process.execPath, [tsc, '-p', app, '--pretty', 'false'], { cwd: app });
      return '';
    } catch (error) {
      const { stdout, stderr } = error as { stdout: string; stderr: string };
      return `${stdout}${stderr}`.trim();
    }
  };

  beforeAll(() => {
    app = mkdtempSync(join(tmpdir(), 'eo-middy7-'));
    const middy = join(app, 'node_modules', '@middy', 'core');
    mkdirSync(middy, { recursive: true });
    writeFileSync(join(middy, 'package.json'), JSON.stringify(MIDDY_7_MANIFEST));
    writeFileSync(
      join(middy, 'index.d.ts'),
      'declare function middy(): { use(middleware: unknown): unknown };\nexport default middy;\n',
    );
    writeFileSync(
      join(middy, 'index.js'),
      'export default function middy() { return { use: () => undefined }; }\n',
    );
    // A cdk init app's package.json: no "type", so .ts files are CommonJS.
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'my-app', version: '0.1.0' }));
    writeFileSync(join(app, 'handler.ts'), HANDLER);
    writeFileSync(join(app, 'handler.mts'), HANDLER);
  });

  afterAll(() => {
    rmSync(app, { recursive: true, force: true });
  });

  it('fails to type-check as a .ts file with TS2307', async () => {
    expect(await typeCheck('handler.ts')).toMatch(
      /^handler\.ts\(1,19\): error TS2307: Cannot find module '@middy\/core'/,
    );
  });

  it('type-checks as a .mts file', async () => {
    expect(await typeCheck('handler.mts')).toBe('');
  });
});
