/**
 * The package exports only the product: walking the import graph from every entry point of
 * `package.json` (each subpath of `exports` and the `bin`), no file of the example app, the
 * scripts or the tests is reachable. Type-only imports count too: the declarations ship them.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');
const readJson = (file: string) => JSON.parse(readFileSync(join(root, file), 'utf8'));

/** Repository-relative path with forward slashes. */
const repoPath = (file: string) => relative(root, file).split('\\').join('/');

/** What the package must never reach: the example app, the tools and the tests. */
const NOT_PRODUCT: readonly { readonly rule: string; readonly matches: (file: string) => boolean }[] = [
  { rule: 'the example stack', matches: (file) => file.startsWith('lib/example/') },
  { rule: 'the CDK app entry', matches: (file) => file.startsWith('bin/') },
  { rule: 'the example handlers', matches: (file) => file.startsWith('lambda/example/') },
  { rule: 'the samples', matches: (file) => file.startsWith('examples/') },
  { rule: 'the scripts', matches: (file) => file.startsWith('scripts/') },
  { rule: 'the benchmarks', matches: (file) => file.startsWith('bench/') },
  { rule: 'the tests', matches: (file) => file.startsWith('test/') },
];

/** The source file of each entry point: `exports` subpaths by their types, and the `bin`. */
function entryPoints(): string[] {
  const manifest = readJson('package.json') as {
    readonly exports: Record<string, { readonly types: string } | string>;
    readonly bin: Record<string, string>;
  };
  const fromExports = Object.values(manifest.exports).flatMap((target) =>
    typeof target === 'string' ? [] : [target.types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts')],
  );
  const fromBin = Object.values(manifest.bin).map((file) =>
    file.replace(/^(\.\/)?dist\//, '').replace(/\.js$/, '.ts'),
  );
  return [...fromExports, ...fromBin];
}

/** The package's own subpaths (`effectively-once/...`) as tsconfig `paths` map them to sources. */
const selfPaths = Object.fromEntries(
  Object.entries(readJson('tsconfig.json').compilerOptions.paths as Record<string, string[]>).map(
    ([specifier, [target]]) => [specifier, resolve(root, target!)],
  ),
);

/** Every module specifier of a source file: imports, re-exports, `import type`, `import()` and `require()`. */
function specifiersOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
  return info.importedFiles.map((imported) => imported.fileName);
}

/** What a specifier names: a repository file, a package (or built-in), or nothing at all. */
type Resolved = { readonly file: string } | 'package' | 'unresolved';

/** Resolves a specifier the way the compiler does for this repository (`.ts`, `/index.ts`, `.json`). */
function resolveSpecifier(from: string, specifier: string): Resolved {
  const self = selfPaths[specifier];
  if (self !== undefined) return { file: self };
  if (!specifier.startsWith('.')) return 'package';
  const base = resolve(dirname(from), specifier);
  const file = [`${base}.ts`, join(base, 'index.ts'), base].find(
    (candidate) => /\.(ts|json)$/.test(candidate) && existsSync(candidate) && statSync(candidate).isFile(),
  );
  return file === undefined ? 'unresolved' : { file };
}

interface ImportGraph {
  /** Every file reached, with the chain of imports from the entry to it. */
  readonly chains: ReadonlyMap<string, readonly string[]>;
  /** Relative specifiers that name no file, as `file imports specifier`. */
  readonly unresolved: readonly string[];
}

/** Walks the imports from `entry` (breadth first, so each chain is a shortest one). */
function walk(entry: string): ImportGraph {
  const start = join(root, entry);
  const chains = new Map<string, readonly string[]>([[repoPath(start), [repoPath(start)]]]);
  const unresolved: string[] = [];
  const queue = [start];
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
    if (!file.endsWith('.ts')) continue;
    const chain = chains.get(repoPath(file))!;
    for (const specifier of specifiersOf(file)) {
      const resolved = resolveSpecifier(file, specifier);
      if (resolved === 'package') continue;
      if (resolved === 'unresolved') {
        unresolved.push(`${repoPath(file)} imports ${specifier}`);
        continue;
      }
      const target = repoPath(resolved.file);
      if (chains.has(target)) continue;
      chains.set(target, [...chain, target]);
      queue.push(resolved.file);
    }
  }
  return { chains, unresolved };
}

/** `<rule>: entry → … → file` for each file of `graph` that is not product. */
function offenders(graph: ImportGraph): string[] {
  return [...graph.chains].flatMap(([file, chain]) =>
    NOT_PRODUCT.filter(({ matches }) => matches(file)).map(({ rule }) => `${rule}: ${chain.join(' → ')}`),
  );
}

describe('package entry points', () => {
  const entries = entryPoints();

  it('walks every entry point of package.json: the nine subpaths and the command', () => {
    expect(entries).toEqual([
      'lambda/index.ts',
      'lambda/worker/index.ts',
      'lambda/http/index.ts',
      'lambda/jobs/index.ts',
      'lambda/streams/index.ts',
      'lambda/kafka/index.ts',
      'lambda/outbox/index.ts',
      'lib/index.ts',
      'cli/replay/index.ts',
      'cli/effectively-once.ts',
    ]);
  });

  it.each(entryPoints())('reaches nothing of the example app, the scripts or the tests from %s', (entry) => {
    const graph = walk(entry);
    expect(graph.unresolved).toEqual([]);
    expect(offenders(graph)).toEqual([]);
  });

  it('follows re-exports, type-only imports and subfolders (the construct reaches its parts and the contract)', () => {
    const reached = [...walk('lib/index.ts').chains.keys()];
    expect(reached).toEqual(
      expect.arrayContaining([
        'lib/idempotent-consumer/construct.ts',
        'lib/idempotent-consumer/props.ts',
        'lib/idempotent-consumer/validation.ts',
        'lib/idempotent-consumer/monitoring.ts',
        'lambda/core/contract.ts',
      ]),
    );
  });

  it('names the offending file and the chain that reaches it', () => {
    expect(offenders(walk('bin/app.ts'))).toEqual(
      expect.arrayContaining([
        'the CDK app entry: bin/app.ts',
        'the example stack: bin/app.ts → lib/example/example-stack.ts',
      ]),
    );
  });
});
