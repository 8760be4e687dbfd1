/**
 * The import graph of the repository's TypeScript sources, read with the TypeScript parser (so
 * comments, strings and TSDoc examples never count as imports), and the cycles in it. Used by the
 * architecture test; `importGraph` also serves any test that asks what an entry point reaches.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, posix, sep } from 'node:path';
import ts from 'typescript';

/** The repository root: every path of a graph is relative to it, with `/` separators. */
export const REPOSITORY_ROOT = join(__dirname, '..', '..');

/**
 * `type`: an `import type`, `export type` or `typeof import('./x')`, always erased. `runtime`:
 * anything else, including `import { type A }` (erased by default, but kept as an import of the
 * module under `verbatimModuleSyntax`), so rules on runtime imports stay strict.
 */
export type ImportKind = 'runtime' | 'type';

/** One import (or re-export) of one file. */
export interface ImportEdge {
  /** The importing file, relative to the repository root. */
  readonly from: string;
  /** The specifier as written: `./options`, `node:crypto`, `effectively-once/http`. */
  readonly specifier: string;
  /** The file it resolves to, relative to the repository root; `undefined` for a package. */
  readonly to: string | undefined;
  readonly kind: ImportKind;
}

/** Every file reached and every import read. */
export interface ImportGraph {
  /** The files of the graph, sorted: those under the roots and every local file they import. */
  readonly files: readonly string[];
  /** The imports of every file, in file order, then source order. */
  readonly edges: readonly ImportEdge[];
}

/** How {@link importGraph} resolves specifiers. */
export interface ImportGraphOptions {
  /**
   * Non-relative specifiers that name a local file (the `paths` of tsconfig.json), each mapped
   * to a path relative to the repository root.
   * @default the `paths` of the repository's tsconfig.json
   */
  readonly aliases?: Readonly<Record<string, string>>;
}

const toPosix = (path: string) => path.split(sep).join('/');

function tsconfigAliases(): Record<string, string> {
  const { config } = ts.readConfigFile(join(REPOSITORY_ROOT, 'tsconfig.json'), ts.sys.readFile);
  const paths: Record<string, readonly string[]> = config?.compilerOptions?.paths ?? {};
  return Object.fromEntries(
    Object.entries(paths).map(([alias, [target]]) => [alias, posix.normalize(target ?? '')]),
  );
}

/** The `.ts` files (not `.d.ts`) under `path` (a folder, or one file), relative to the root. */
function sourcesUnder(path: string): string[] {
  const absolute = join(REPOSITORY_ROOT, path);
  if (!statSync(absolute).isDirectory()) return [toPosix(path)];
  return readdirSync(absolute, { withFileTypes: true }).flatMap((entry) => {
    const child = join(path, entry.name);
    if (entry.isDirectory()) return sourcesUnder(child);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts') ? [toPosix(child)] : [];
  });
}

/**
 * The repository file a specifier of `fromFile` names (both relative to the repository root):
 * `./x` or `../x` as `x.ts`, `x` itself when it ends in `.ts`, or `x/index.ts`; an alias (a
 * tsconfig `paths` entry) as its target. `undefined` for a package or a node built-in.
 */
export function resolveImport(
  fromFile: string,
  specifier: string,
  aliases: Readonly<Record<string, string>> = tsconfigAliases(),
): string | undefined {
  const aliased = aliases[specifier];
  let base: string;
  if (aliased !== undefined) base = aliased;
  else if (specifier.startsWith('./') || specifier.startsWith('../'))
    base = posix.join(posix.dirname(fromFile), specifier);
  else return undefined;
  const isFile = (candidate: string) =>
    candidate.endsWith('.ts') &&
    existsSync(join(REPOSITORY_ROOT, candidate)) &&
    statSync(join(REPOSITORY_ROOT, candidate)).isFile();
  return [`${base}.ts`, base, `${base}/index.ts`].find(isFile);
}

/** The specifier and kind of every import, re-export and `import()` of one source text. */
export function importsOf(fileName: string, text: string): { specifier: string; kind: ImportKind }[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, false, ts.ScriptKind.TS);
  const found: { specifier: string; kind: ImportKind }[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      const kind = node.importClause?.isTypeOnly ? 'type' : 'runtime';
      found.push({ specifier: node.moduleSpecifier.text, kind });
    } else if (
      ts.isExportDeclaration(node) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    ) {
      found.push({ specifier: node.moduleSpecifier.text, kind: node.isTypeOnly ? 'type' : 'runtime' });
    } else if (
      ts.isCallExpression(node) &&
      node.expression.kind === ts.SyntaxKind.ImportKeyword &&
      node.arguments[0] !== undefined &&
      ts.isStringLiteral(node.arguments[0])
    ) {
      found.push({ specifier: node.arguments[0].text, kind: 'runtime' });
    } else if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    ) {
      // `typeof import('./x')` in a type position.
      found.push({ specifier: node.argument.literal.text, kind: 'type' });
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/**
 * The import graph of every `.ts` file under `roots` (folders or files, relative to the
 * repository root), followed through every local file they import, wherever it lives.
 *
 * @example
 * const { edges } = importGraph(['lambda', 'lib', 'cli']);
 * const cycles = findCycles(adjacency(edges)).map(formatCycle);
 */
export function importGraph(roots: readonly string[], options: ImportGraphOptions = {}): ImportGraph {
  const aliases = options.aliases ?? tsconfigAliases();
  const pending = roots.flatMap(sourcesUnder);
  const seen = new Set<string>();
  const edgesByFile = new Map<string, ImportEdge[]>();
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const text = readFileSync(join(REPOSITORY_ROOT, file), 'utf8');
    const edges = importsOf(file, text).map(({ specifier, kind }) => ({
      from: file,
      specifier,
      to: resolveImport(file, specifier, aliases),
      kind,
    }));
    edgesByFile.set(file, edges);
    for (const edge of edges) if (edge.to !== undefined && !seen.has(edge.to)) pending.push(edge.to);
  }
  const files = [...seen].sort();
  return { files, edges: files.flatMap((file) => edgesByFile.get(file) ?? []) };
}

/** Each file's local imports (each target once, sorted), for {@link findCycles}. */
export function adjacency(edges: readonly ImportEdge[]): Map<string, string[]> {
  const next = new Map<string, Set<string>>();
  for (const { from, to } of edges) {
    if (!next.has(from)) next.set(from, new Set());
    if (to !== undefined) next.get(from)!.add(to);
  }
  return new Map([...next].map(([file, targets]) => [file, [...targets].sort()]));
}

/** The files reachable from `starts` (themselves included), sorted. */
export function reachableFrom(graph: ReadonlyMap<string, readonly string[]>, starts: readonly string[]) {
  const seen = new Set<string>();
  const pending = [...starts];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    pending.push(...(graph.get(file) ?? []));
  }
  return [...seen].sort();
}

/** The strongly connected components of `graph` (Tarjan's algorithm), each sorted. */
export function stronglyConnectedComponents(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const index = new Map<string, number>();
  const lowLink = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const nodes = [...new Set([...graph.keys(), ...[...graph.values()].flat()])].sort();

  const connect = (node: string): void => {
    index.set(node, index.size);
    lowLink.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        lowLink.set(node, Math.min(lowLink.get(node)!, lowLink.get(next)!));
      } else if (onStack.has(next)) {
        lowLink.set(node, Math.min(lowLink.get(node)!, index.get(next)!));
      }
    }
    if (lowLink.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      components.push(component.sort());
    }
  };

  for (const node of nodes) if (!index.has(node)) connect(node);
  return components;
}

/**
 * Every elementary cycle of `graph`, each written from its smallest file and closed by repeating
 * it (`['a.ts', 'b.ts', 'a.ts']`), sorted. A cycle lies inside one strongly connected component,
 * so only components of more than one file (or a file importing itself) are searched.
 */
export function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const cycles: string[][] = [];
  for (const component of stronglyConnectedComponents(graph)) {
    const members = new Set(component);
    const isCyclic = component.length > 1 || (graph.get(component[0]!) ?? []).includes(component[0]!);
    if (!isCyclic) continue;
    // From each start, follow only files after it, so each cycle is found once, from its smallest file.
    for (const start of component) {
      const path = [start];
      const walk = (node: string): void => {
        for (const next of graph.get(node) ?? []) {
          if (!members.has(next)) continue;
          if (next === start) cycles.push([...path, start]);
          else if (next > start && !path.includes(next)) {
            path.push(next);
            walk(next);
            path.pop();
          }
        }
      };
      walk(start);
    }
  }
  return cycles.sort((a, b) => a.join(' ').localeCompare(b.join(' ')));
}

/** A cycle as one line: `lambda/core/options.ts -> lambda/core/two-phase.ts -> lambda/core/options.ts`. */
export function formatCycle(cycle: readonly string[]): string {
  return cycle.join(' -> ');
}
