/**
 * The API report of every entry point of package.json `exports`: API Extractor reads the built
 * declarations (`npm run build` first) and compares each entry point's public surface with its
 * checked-in report, `etc/<entry>.api.md`.
 *
 *   npx tsx scripts/api-report.ts           fails when a report differs (CI: `npm run api:check`)
 *   npx tsx scripts/api-report.ts --update  rewrites the reports (`npm run api:update`)
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CompilerState, Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const root = join(__dirname, '..');
const update = process.argv.includes('--update');

/** The report name of an exports subpath: `.` is `index`, `./worker` is `worker`. */
export function reportNameOf(subpath: string): string {
  return subpath === '.' ? 'index' : subpath.slice(2);
}

interface Conditions {
  readonly types: string;
}
const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
  readonly exports: Record<string, Conditions | string>;
};
const entries = Object.entries(manifest.exports).flatMap(([subpath, target]) =>
  typeof target === 'string' ? [] : [{ name: reportNameOf(subpath), types: target.types }],
);

const configPath = join(root, 'api-extractor.json');
const base = ExtractorConfig.loadFile(configPath);
const configs = entries.map(({ name, types }) => ({
  name,
  config: ExtractorConfig.prepare({
    configObject: {
      ...base,
      mainEntryPointFilePath: `<projectFolder>/${types.replace(/^\.\//, '')}`,
      apiReport: { ...base.apiReport!, enabled: true, reportFileName: name },
    },
    configObjectFullPath: configPath,
    packageJsonFullPath: join(root, 'package.json'),
  }),
}));
// One TypeScript program for every entry point (a program per entry point takes six times as long).
const compilerState = CompilerState.create(configs[0]!.config, {
  additionalEntryPoints: configs.map(({ config }) => config.mainEntryPointFilePath),
});
const failures: string[] = [];
for (const { name, config } of configs) {
  const result = Extractor.invoke(config, { localBuild: update, compilerState, showVerboseMessages: false });
  if (!result.succeeded) {
    const changed = result.apiReportChanged ? `, the public surface differs from etc/${name}.api.md` : '';
    failures.push(`${name}: ${result.errorCount} errors, ${result.warningCount} warnings${changed}`);
  }
}
if (failures.length > 0) {
  console.error(
    `API report check failed:\n  ${failures.join('\n  ')}\nIf the change is intended, run npm run api:update and commit etc/.`,
  );
  process.exitCode = 1;
} else {
  console.log(`API reports ${update ? 'written' : 'match'}: ${entries.map(({ name }) => name).join(', ')}`);
}
