/**
 * Import rules of the adapters beyond the Lambda SQS handler (worker, HTTP, jobs): separate
 * entry points that the Lambda handler never bundles, free of process.env and of the system
 * clock (injected), named exports only.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { bundledInputs } from '../bundled-inputs';

const root = join(__dirname, '..', '..', '..');
const ADAPTERS = ['lambda/worker', 'lambda/http', 'lambda/jobs'];

const sources = (directory: string): string[] =>
  readdirSync(join(root, directory))
    .filter((name) => name.endsWith('.ts'))
    .map((name) => join(directory, name));
/** Source without comments, so TSDoc examples do not count as code. */
const code = (file: string) =>
  readFileSync(join(root, file), 'utf8')
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');

describe('adapter entry points', () => {
  it('keeps the worker, HTTP and job adapters and sqs-consumer out of the Lambda SQS handler bundle', async () => {
    const inputs = await bundledInputs('lambda/sqs/sqs-handler.ts');
    expect(inputs.filter((input) => ADAPTERS.some((adapter) => input.startsWith(adapter)))).toEqual([]);
    expect(inputs.filter((input) => input.includes('sqs-consumer'))).toEqual([]);
  });

  it('loads sqs-consumer only from the worker entry point', async () => {
    for (const entry of ['lambda/http/index.ts', 'lambda/jobs/index.ts']) {
      const inputs = await bundledInputs(entry);
      expect({ entry, sqsConsumer: inputs.filter((input) => input.includes('sqs-consumer')) }).toEqual({
        entry,
        sqsConsumer: [],
      });
    }
    expect(
      (await bundledInputs('lambda/worker/index.ts')).some((input) => input.includes('sqs-consumer')),
    ).toBe(true);
  });

  it('reads no environment and never calls the system clock directly', () => {
    for (const file of ADAPTERS.flatMap(sources)) {
      const text = code(file);
      expect({ file, env: /process\.env/.test(text), clock: /Date\.now\(/.test(text) }).toEqual({
        file,
        env: false,
        clock: false,
      });
    }
  });

  it('uses named exports only and lists every export of its barrel explicitly', () => {
    for (const file of ADAPTERS.flatMap(sources)) {
      expect({ file, defaultExport: /^export default/m.test(code(file)) }).toEqual({
        file,
        defaultExport: false,
      });
    }
    for (const adapter of ADAPTERS) {
      expect(code(`${adapter}/index.ts`)).not.toMatch(/export \*/);
    }
  });
});
