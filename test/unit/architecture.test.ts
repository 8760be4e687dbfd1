import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  adjacency,
  findCycles,
  formatCycle,
  importGraph,
  importsOf,
  resolveImport,
} from '../support/import-graph';

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
const runtimeImports = (file: string) =>
  importsOf(file, read(file))
    .filter(({ kind }) => kind === 'runtime')
    .map(({ specifier }) => specifier);
/** Source without comments, so TSDoc examples do not count as code. */
const code = (text: string) => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

describe('architecture', () => {
  const core = sources('lambda/core');

  it('keeps the core free of AWS clients, middy, process.env and the system clock', () => {
    const violations = core.flatMap((file) => {
      const text = code(read(file));
      return [
        ...runtimeImports(file)
          .filter((specifier) => !specifier.startsWith('./') && specifier !== 'node:crypto')
          .map((specifier) => `${file}: imports ${specifier}`),
        ...(/process\.env/.test(text) ? [`${file}: reads process.env`] : []),
        ...(/Date\.now\(/.test(text) ? [`${file}: calls Date.now()`] : []),
      ];
    });
    expect(violations).toEqual([]);
  });

  it('the core imports no mode module', () => {
    // Every import, type-only ones too: the engine knows the Mode port, never a mode.
    const allImports = (text: string) =>
      [...text.matchAll(/^(?:import|export)\s[^'";]*?from\s+'([^']+)'/gm)].map((match) => match[1]!);
    for (const file of core) {
      const modes = allImports(read(file)).filter(
        (specifier) => specifier.includes('/modes/') || specifier.startsWith('../modes'),
      );
      expect({ file, modes }).toEqual({ file, modes: [] });
    }
  });

  it('keeps the shared contract dependency-free', () => {
    const file = 'lambda/core/contract.ts';
    const violations = importsOf(file, read(file)).map(
      ({ specifier, kind }) => `${file}: imports ${specifier} (${kind})`,
    );
    expect(violations).toEqual([]);
    expect(read(file)).not.toMatch(/^import /m);
  });

  it('reads process.env only in the entry point and the deployable handlers', () => {
    const readers = sources('lambda')
      .filter((file) => /process\.env/.test(code(read(file))))
      .map((file) => relative('lambda', file));
    // The consumer entry reads the construct's EO_* variables for every consumer entry point
    // (SQS handler, middleware, worker, streams), and everything else takes the environment as a
    // parameter. The outbox relay's entry point reads the `Outbox` construct's, in the one module
    // of its environment defaults.
    expect(readers.filter((file) => !file.startsWith('example/'))).toEqual([
      'consumer-entry.ts',
      'outbox/relay-environment.ts',
    ]);
  });

  it('keeps the middy adapter free of a runtime dependency on middy', () => {
    const violations = sources('lambda/middleware').flatMap((file) =>
      runtimeImports(file)
        .filter((specifier) => specifier.startsWith('@middy'))
        .map((specifier) => `${file}: imports ${specifier}`),
    );
    expect(violations).toEqual([]);
  });

  it('uses named exports only', () => {
    const violations = [
      ...sources('lambda/core'),
      ...sources('lambda/example'),
      'lambda/index.ts',
      'lambda/consumer-entry.ts',
      ...sources('lambda/sqs'),
      ...sources('lambda/streams'),
      ...sources('lambda/kafka'),
    ]
      .filter((file) => /^export default/m.test(read(file)))
      .map((file) => `${file}: export default`);
    expect(violations).toEqual([]);
  });
});

describe('import cycles', () => {
  /**
   * Every folder of code, the tools included. Type imports count: a type import is a dependency
   * between modules even though it is erased (the last cycles, the options <-> two-phase <->
   * process-message loop and bench's implementations <-> latency model <-> traces, were each
   * closed by one).
   */
  const CODE_FOLDERS = ['lambda', 'lib', 'cli', 'scripts', 'bench'] as const;

  it('finds every elementary cycle of a graph, each spelled from its smallest file', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['a.ts', 'c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
      ['e.ts', ['e.ts']],
      ['f.ts', ['d.ts']],
    ]);

    expect(findCycles(graph).map(formatCycle)).toEqual([
      'a.ts -> b.ts -> a.ts',
      'a.ts -> b.ts -> c.ts -> a.ts',
      'e.ts -> e.ts',
    ]);
  });

  it('finds no cycle in a graph without one', () => {
    const graph = new Map([
      ['a.ts', ['b.ts', 'c.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', []],
    ]);

    expect(findCycles(graph)).toEqual([]);
  });

  it('reads runtime and type imports, re-exports and import() with the TypeScript parser, not comments or strings', () => {
    const text = [
      "import { a } from './a';",
      "import type { B } from './b';",
      "import { type C } from './c';",
      "import './d';",
      "export { e } from './e';",
      "export type { F } from './f';",
      "export * from './g';",
      "const h = () => import('./h');",
      "type I = typeof import('./i');",
      "/** @example import { j } from './j'; */",
      'const k = "import { k } from \'./k\'";',
    ].join('\n');

    expect(importsOf('sample.ts', text)).toEqual([
      { specifier: './a', kind: 'runtime' },
      { specifier: './b', kind: 'type' },
      { specifier: './c', kind: 'runtime' },
      { specifier: './d', kind: 'runtime' },
      { specifier: './e', kind: 'runtime' },
      { specifier: './f', kind: 'type' },
      { specifier: './g', kind: 'runtime' },
      { specifier: './h', kind: 'runtime' },
      { specifier: './i', kind: 'type' },
    ]);
  });

  it('resolves relative specifiers, folder indexes and the tsconfig paths to files of the repository', () => {
    expect(resolveImport('lambda/core/options.ts', './mode')).toBe('lambda/core/mode.ts');
    expect(resolveImport('lambda/middleware/sqs-middleware.ts', '../sqs/sqs-handler')).toBe(
      'lambda/sqs/sqs-handler.ts',
    );
    expect(resolveImport('lambda/index.ts', './http/index')).toBe('lambda/http/index.ts');
    expect(resolveImport('lambda/index.ts', './http')).toBe('lambda/http/index.ts');
    expect(resolveImport('examples/sqs-key-sources.ts', 'effectively-once')).toBe('lambda/index.ts');
    expect(resolveImport('examples/sqs-key-sources.ts', 'effectively-once/http')).toBe(
      'lambda/http/index.ts',
    );
    expect(resolveImport('lambda/core/fingerprint.ts', 'node:crypto')).toBeUndefined();
    expect(resolveImport('lib/index.ts', 'aws-cdk-lib')).toBeUndefined();
  });

  it('builds the graph of every file under the roots and every local file they import', () => {
    const { files, edges } = importGraph(['lambda/middleware']);

    expect(files).toContain('lambda/middleware/sqs-middleware.ts');
    expect(files).toContain('lambda/sqs/sqs-handler.ts');
    expect(files).toContain('lambda/core/contract.ts');
    expect(edges).toContainEqual({
      from: 'lambda/middleware/sqs-middleware.ts',
      specifier: '../sqs/sqs-handler',
      to: 'lambda/sqs/sqs-handler.ts',
      kind: 'runtime',
    });
    expect(edges.filter((edge) => edge.specifier.startsWith('.') && edge.to === undefined)).toEqual([]);
  });

  it.each(CODE_FOLDERS)('has no import cycle through a file of %s/', (folder) => {
    const { edges } = importGraph([folder]);
    const cycles = findCycles(adjacency(edges)).filter((cycle) =>
      cycle.some((file) => file.startsWith(`${folder}/`)),
    );

    expect(cycles.map(formatCycle)).toEqual([]);
  });
});

describe('dev-only code', () => {
  it('keeps the scripts from importing the tests (what both need lives in scripts/support/)', () => {
    const { edges } = importGraph(['scripts']);
    const violations = edges
      .filter(({ from, to }) => from.startsWith('scripts/') && to?.startsWith('test/'))
      .map(({ from, specifier }) => `${from} imports ${specifier}`);

    expect(violations).toEqual([]);
  });
});

describe('adapter boundaries', () => {
  /**
   * The adapters built on the core: the transports (SQS, the streams, Kafka, HTTP, jobs, the
   * outbox relay), the hosts of a transport (the middy middleware and the `sqs-consumer` worker run the
   * SQS transport; the outbox relay reads the outbox table's stream records), the Powertools
   * interop, and the DynamoDB store. The store and the dead-letter
   * queue are destinations every adapter may use; the neutral entry (`lambda/consumer-entry.ts`)
   * is not an adapter folder, so every entry point may build on it.
   */
  const ADAPTERS = [
    'http',
    'jobs',
    'worker',
    'middleware',
    'interop',
    'sqs',
    'streams',
    'kafka',
    'outbox',
    'store',
  ];
  const SHARED = ['store'];
  /**
   * A host may use the transport it runs, and only that one. Kafka is a stream transport: its
   * handler runs the streams' engine (a checkpoint per ordering group, lossless stream dead letters).
   */
  const HOSTS: Readonly<Record<string, string>> = {
    worker: 'sqs',
    middleware: 'sqs',
    outbox: 'streams',
    kafka: 'streams',
  };
  const adapterOf = (file: string | undefined): string | undefined => {
    const [top, folder, ...rest] = (file ?? '').split('/');
    return top === 'lambda' && rest.length > 0 && ADAPTERS.includes(folder!) ? folder : undefined;
  };
  /**
   * The imports of `file` (source `text`) that reach into a sibling adapter, each naming the file,
   * the import and the adapter: imports, type-only imports, re-exports and `import()` alike.
   */
  const siblingImports = (file: string, text: string): string[] =>
    importsOf(file, text).flatMap(({ specifier }) => {
      const target = adapterOf(resolveImport(file, specifier));
      const own = adapterOf(file);
      return target === undefined ||
        target === own ||
        SHARED.includes(target) ||
        (own !== undefined && HOSTS[own] === target)
        ? []
        : [`${file} imports '${specifier}' (the ${target} adapter)`];
    });

  it('keeps every adapter from importing a sibling adapter (the store is shared, a host uses its transport)', () => {
    const files = ADAPTERS.flatMap((adapter) => sources(`lambda/${adapter}`));
    expect(files.flatMap((file) => siblingImports(file, read(file)))).toEqual([]);
  });

  it('names the offending file and import, for imports, type imports, re-exports and dynamic imports', () => {
    const text = [
      "import { createJobGuard } from '../jobs/job-guard';",
      "import type { SqsWorkerOptions } from '../worker/sqs-worker';",
      "export { createSqsHandler } from '../consumer-entry';",
      "import { createDynamoDbStore } from '../store/dynamodb-store';",
      "import { readIdempotencyKey } from './http-event';",
      "const handler = import('../sqs/sqs-handler');",
      "// import { createSqsMiddleware } from '../middleware/sqs-middleware';",
    ].join('\n');
    expect(siblingImports('lambda/http/handler.ts', text)).toEqual([
      "lambda/http/handler.ts imports '../jobs/job-guard' (the jobs adapter)",
      "lambda/http/handler.ts imports '../worker/sqs-worker' (the worker adapter)",
      "lambda/http/handler.ts imports '../sqs/sqs-handler' (the sqs adapter)",
    ]);
    // The worker runs the SQS transport; the streams may not.
    expect(
      siblingImports('lambda/worker/batch-handler.ts', "import { x } from '../sqs/sqs-handler';"),
    ).toEqual([]);
    expect(
      siblingImports('lambda/streams/stream-handler.ts', "import { x } from '../sqs/sqs-event';"),
    ).toEqual(["lambda/streams/stream-handler.ts imports '../sqs/sqs-event' (the sqs adapter)"]);
  });

  it('keeps the engine transport-free: lambda/core imports no module of lambda/ outside it and names no SQS, Kinesis or DynamoDB Streams type', () => {
    const violations = sources('lambda/core').flatMap((file) => {
      const text = read(file);
      return [
        ...importsOf(file, text)
          .filter(({ specifier }) => specifier.startsWith('.') && !specifier.startsWith('./'))
          .map(({ specifier }) => `${file}: imports ${specifier}`),
        ...[...code(text).matchAll(/\b(Sqs[A-Z]\w*|Kinesis\w*|DynamoDbStream\w*)\b/g)].map(
          (match) => `${file}: names ${match[1]}`,
        ),
      ];
    });
    expect(violations).toEqual([]);
  });
});
