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
