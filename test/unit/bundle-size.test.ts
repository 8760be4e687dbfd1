import { join } from 'node:path';
import { build } from 'esbuild';
import { describe, expect, it } from 'vitest';

const root = join(__dirname, '..', '..');

async function minifiedBytes(entry: string, external: string[] = []): Promise<number> {
  const result = await build({
    entryPoints: [join(root, entry)],
    bundle: true,
    minify: true,
    platform: 'node',
    format: 'cjs',
    write: false,
    logLevel: 'silent',
    external: ['@aws-sdk/*', ...external],
  });
  return result.outputFiles[0]!.contents.byteLength;
}

describe('bundle size', () => {
  // The design target is 15 KB for all runtime code a handler bundles. The full path a handler
  // pays for, `createSqsHandler` with every mode and the DynamoDB store (AWS SDK external),
  // measured 32,971 bytes before the size work and 30,183 after it; it grew to 30,692 and was
  // trimmed to 29,851 (11.6 KB gzipped), including the owner check of a retried complete and the
  // store's fenced checkpoint `replace`, then 29,764 with one kind of release (29,805 with the shared metrics publish): every mode sits behind the one `mode` option, so every
  // handler carries all four. This ratchet (the size rounded up to the next 256 bytes) keeps it
  // from growing; the target is not met. Issue 12's transport fixes (FIFO told by the queue, not
  // the group id; the deadline margin capped at half the time left; user error messages kept out
  // of logs and dead letters unless asked; the original deduplication id kept across a redrive)
  // took it to 30,928.
  it('keeps createSqsHandler, every mode and the DynamoDB store within 31,232 bytes minified, AWS SDK excluded', async () => {
    expect(await minifiedBytes('lambda/sqs-handler.ts')).toBeLessThanOrEqual(31_232);
  });

  // The ratchet stood at 16 KB (15,974 bytes measured) before two-phase mode; claims, takeovers,
  // stuck claims, heartbeat, stored results, derived keys and version guards added about 4 KB;
  // issue 12's transport fixes (above) took it from 19,476 to 20,599.
  it('keeps the core and createSqsHandler within 20,736 bytes minified, AWS SDK and store excluded', async () => {
    expect(await minifiedBytes('lambda/sqs-handler.ts', ['./store/dynamodb-store'])).toBeLessThanOrEqual(
      20_736,
    );
  });
});
