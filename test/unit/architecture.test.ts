import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');

function sources(directory: string): string[] {
  return readdirSync(join(root, directory), { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory()
      ? sources(join(directory, entry.name))
      : entry.name.endsWith('.ts')
        ? [join(directory, entry.name)]
        : [],
  );
}

const read = (file: string) => readFileSync(join(root, file), 'utf8');
/** Module specifiers of runtime imports (type-only imports are erased and allowed). */
const runtimeImports = (text: string) =>
  [...text.matchAll(/^import\s+(?!type\s)[^'";]*?from\s+'([^']+)'/gm)].map((match) => match[1]!);
/** Source without comments, so TSDoc examples do not count as code. */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

describe('architecture', () => {
  const core = sources('lambda/core');

  it('keeps the core free of AWS clients, middy, process.env and the system clock', () => {
    for (const file of core) {
      const text = code(read(file));
      const imports = runtimeImports(read(file)).filter((specifier) => !specifier.startsWith('./'));
      expect({ file, imports }).toEqual({
        file,
        imports: imports.filter((specifier) => specifier === 'node:crypto'),
      });
      expect({ file, env: /process\.env/.test(text) }).toEqual({ file, env: false });
      expect({ file, clock: /Date\.now\(/.test(text) }).toEqual({ file, clock: false });
    }
  });

  it('keeps the shared contract dependency-free', () => {
    expect(runtimeImports(read('lambda/core/contract.ts'))).toEqual([]);
    expect(read('lambda/core/contract.ts')).not.toMatch(/^import /m);
  });

  it('reads process.env only in the entry point and the deployable handlers', () => {
    const readers = sources('lambda')
      .filter((file) => /process\.env/.test(code(read(file))))
      .map((file) => relative('lambda', file));
    // `createSqsHandler` reads the construct's EO_* variables; the middleware and the worker
    // build on it, and everything else takes the environment as a parameter.
    expect(readers.filter((file) => !file.startsWith('handlers/'))).toEqual(['sqs-handler.ts']);
  });

  it('keeps the middy adapter free of a runtime dependency on middy', () => {
    for (const file of sources('lambda/middleware')) {
      expect(runtimeImports(read(file)).filter((specifier) => specifier.startsWith('@middy'))).toEqual([]);
    }
  });

  it('uses named exports only', () => {
    for (const file of [
      ...sources('lambda/core'),
      ...sources('lambda/handlers'),
      'lambda/index.ts',
      'lambda/sqs-handler.ts',
    ]) {
      expect({ file, defaultExport: /^export default/m.test(read(file)) }).toEqual({
        file,
        defaultExport: false,
      });
    }
  });
});

describe('adapter boundaries', () => {
  /**
   * The adapters built on the core. The DynamoDB store is one too, and the one every other
   * adapter may use; the SQS entry (`lambda/sqs-handler.ts`) is not an adapter folder, so the
   * worker and the middleware may build on it.
   */
  const ADAPTERS = ['http', 'jobs', 'worker', 'middleware', 'sqs', 'store'];
  const SHARED_ADAPTER = 'store';
  const adapterOf = (file: string): string | undefined => {
    const [top, folder, ...rest] = file.split('/');
    return top === 'lambda' && rest.length > 0 && ADAPTERS.includes(folder!) ? folder : undefined;
  };
  /** Every module specifier a file names: imports (type-only too), re-exports, dynamic imports. */
  const specifiers = (text: string) =>
    [
      ...text.matchAll(/^(?:import|export)\s[^'";]*?from\s+'([^']+)'/gm),
      ...text.matchAll(/\bimport\(\s*'([^']+)'\s*\)/g),
    ].map((match) => match[1]!);
  /** The imports of `file` (source `text`) that reach into a sibling adapter, each naming both. */
  const siblingImports = (file: string, text: string): string[] =>
    specifiers(code(text)).flatMap((specifier) => {
      const own = adapterOf(file);
      const target = specifier.startsWith('.')
        ? adapterOf(relative(root, join(root, file, '..', specifier)))
        : undefined;
      return target === undefined || target === own || target === SHARED_ADAPTER
        ? []
        : [`${file} imports '${specifier}' (the ${target} adapter)`];
    });

  it('keeps every adapter from importing a sibling adapter (the store is shared)', () => {
    const files = ADAPTERS.flatMap((adapter) => sources(join('lambda', adapter)));
    expect(files.flatMap((file) => siblingImports(file, read(file)))).toEqual([]);
  });

  it('names the offending file and import, for imports, type imports, re-exports and dynamic imports', () => {
    const text = [
      "import { createLeaseClaim } from '../jobs/lease-claim';",
      "import type { SqsRecord } from '../worker/sqs-record';",
      "export { createSqsHandler } from '../sqs-handler';",
      "import { createDynamoDbStore } from '../store/dynamodb-store';",
      "import { readIdempotencyKey } from './http-event';",
      "const sender = import('../sqs/dead-letter-sender');",
    ].join('\n');
    expect(siblingImports('lambda/http/handler.ts', text)).toEqual([
      "lambda/http/handler.ts imports '../jobs/lease-claim' (the jobs adapter)",
      "lambda/http/handler.ts imports '../worker/sqs-record' (the worker adapter)",
      "lambda/http/handler.ts imports '../sqs/dead-letter-sender' (the sqs adapter)",
    ]);
  });
});
