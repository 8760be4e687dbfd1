/**
 * What package.json promises a registry and a user: where the project lives, how it is
 * published (public, with provenance), one AWS SDK floor, side effects only where they are, and
 * a changelog that ships. The tarball itself is checked in `test/infra/package.test.ts`.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'));
const manifest = readJson(join(root, 'package.json'));

describe('package.json', () => {
  it('names the repository, its home page and its issue tracker on the same GitHub project', () => {
    expect({
      repository: manifest.repository,
      homepage: manifest.homepage,
      bugs: manifest.bugs,
    }).toEqual({
      repository: { type: 'git', url: 'git+https://github.com/effectively-once/effectively-once.git' },
      homepage: 'https://github.com/effectively-once/effectively-once#readme',
      bugs: { url: 'https://github.com/effectively-once/effectively-once/issues' },
    });
    expect(manifest.keywords).toEqual(
      expect.arrayContaining(['aws', 'lambda', 'sqs', 'dynamodb', 'idempotency']),
    );
    expect(manifest.author).toBe('effectively-once contributors');
  });

  it('publishes publicly with provenance', () => {
    expect(manifest.publishConfig).toEqual({ access: 'public', provenance: true });
    expect(manifest.private).toBe(false);
  });

  it('depends on the AWS SDK clients at one floor, and on util-dynamodb at the range that floor requires', () => {
    const sdk = Object.entries(manifest.dependencies as Record<string, string>).filter(([name]) =>
      name.startsWith('@aws-sdk/'),
    );
    const clients = sdk.filter(([name]) => name !== '@aws-sdk/util-dynamodb');
    expect(new Set(clients.map(([, range]) => range))).toEqual(new Set(['^3.1169.0']));
    // util-dynamodb has its own version line (no 3.1169 release): take the range lib-dynamodb
    // itself declares, so the two can never disagree.
    const libDynamoDb = readJson(join(root, 'node_modules', '@aws-sdk', 'lib-dynamodb', 'package.json'));
    expect(manifest.dependencies['@aws-sdk/util-dynamodb']).toBe(
      libDynamoDb.dependencies['@aws-sdk/util-dynamodb'],
    );
  });

  it('declares side effects only for the bin, which runs the CLI when loaded', () => {
    expect(manifest.sideEffects).toEqual([`./${manifest.bin['effectively-once']}`]);
  });

  it('ships the compiled package and the changelog, and builds no source maps', () => {
    expect(manifest.files).toEqual(['dist', 'CHANGELOG.md']);
    const build = readJson(join(root, 'tsconfig.build.json')).compilerOptions;
    expect({ sourceMap: build.sourceMap, inlineSources: build.inlineSources }).toEqual({
      sourceMap: undefined,
      inlineSources: undefined,
    });
  });

  it('has a changelog entry for the version in package.json', () => {
    const changelog = readFileSync(join(root, 'CHANGELOG.md'), 'utf8');
    expect(changelog).toMatch(new RegExp(`^## \\[${manifest.version.replace(/\./g, '\\.')}\\]`, 'm'));
  });

  it('runs the API reference, the API report check and the publish dry run in CI', () => {
    const ci = readFileSync(join(root, '.ci', 'run'), 'utf8');
    expect(manifest.scripts).toMatchObject({
      docs: 'typedoc',
      'api:check': 'npm run build && tsx scripts/api-report.ts',
      'api:update': 'npm run build && tsx scripts/api-report.ts --update',
      'publish:check': 'npm publish --dry-run',
    });
    for (const script of ['docs', 'api:check', 'publish:check']) {
      expect(ci).toContain(`npm run ${script}\n`);
    }
  });
});
