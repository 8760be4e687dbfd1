import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(__dirname, '..', '..');

function importsOf(file: string): string[] {
  const source = fs.readFileSync(file, 'utf8');
  return [...source.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+['"]([^'"]+)['"]/gm)].map(
    (match) => match[1]!,
  );
}

function tsFiles(dir: string): string[] {
  return fs
    .readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => path.join(ROOT, dir, file));
}

describe('infrastructure import rules', () => {
  it('lets lib/ import only aws-cdk-lib, constructs, node built-ins, itself, the shared contract and the error vocabulary', () => {
    // The two runtime files lib/ may use: both import nothing, so lib/ pulls in no runtime code.
    const runtimeFiles = ['lambda/core/contract', 'lambda/core/errors'];
    for (const file of tsFiles('lib')) {
      for (const specifier of importsOf(file)) {
        const target = specifier.startsWith('.')
          ? path
              .relative(ROOT, path.resolve(path.dirname(file), specifier))
              .split(path.sep)
              .join('/')
          : undefined;
        const allowed =
          specifier === 'aws-cdk-lib' ||
          specifier.startsWith('aws-cdk-lib/') ||
          specifier === 'constructs' ||
          specifier.startsWith('node:') ||
          (target !== undefined && (runtimeFiles.includes(target) || /^lib\/[a-z0-9/-]+$/.test(target)));
        expect(allowed, `${path.relative(ROOT, file)} imports ${specifier}`).toBe(true);
      }
    }
    for (const file of runtimeFiles) {
      expect(importsOf(path.join(ROOT, `${file}.ts`)), `${file}.ts imports`).toEqual([]);
    }
  });

  it('keeps cdk-nag out of lib/ and lets bin/ import only lib/, aws-cdk-lib and cdk-nag', () => {
    for (const file of tsFiles('bin')) {
      for (const specifier of importsOf(file)) {
        const allowed =
          specifier === 'aws-cdk-lib' ||
          specifier.startsWith('aws-cdk-lib/') ||
          specifier === 'cdk-nag' ||
          specifier.startsWith('../lib/');
        expect(allowed, `${path.relative(ROOT, file)} imports ${specifier}`).toBe(true);
      }
    }
  });

  it('names every file of lib/ and bin/ in kebab-case', () => {
    for (const file of [...tsFiles('lib'), ...tsFiles('bin')]) {
      expect(path.basename(file)).toMatch(/^[a-z0-9]+(-[a-z0-9]+)*\.ts$/);
    }
  });

  it('lists every export of lib/ explicitly in its barrel', () => {
    const barrel = fs.readFileSync(path.join(ROOT, 'lib', 'index.ts'), 'utf8');
    expect(barrel).not.toMatch(/export \*/);
  });
});
