/**
 * `effectively-once replay`: reads the log, runs the double tap with real SDK clients,
 * prints the report and picks the exit code.
 */

import { readFile } from 'node:fs/promises';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { SQSClient } from '@aws-sdk/client-sqs';
import type { ReplayCliOptions } from './args';
import { commandClientConfig } from './aws';
import { doubleTap } from './double-tap';
import { ReplayError } from './errors';
import { formatDifferences, formatJsonReport, formatVerdict } from './format';
import { createProgressReporter } from './progress';

/** Where the CLI writes. `isTTY` on `stderr` turns the progress bar on. */
export interface CliIo {
  readonly stdout: { write(text: string): unknown };
  readonly stderr: { write(text: string): unknown; readonly isTTY?: boolean };
}

/** Exit codes of the CLI. */
export const EXIT = Object.freeze({ unchanged: 0, changed: 1, error: 2 });

/**
 * Runs one double tap as the CLI does. Returns the exit code: 0 when the second replay
 * changed nothing, 1 when it changed something; errors are thrown (see `main`).
 *
 * @throws {ReplayError} for an unreadable or invalid log and everything `doubleTap` throws.
 */
export async function runReplay(options: ReplayCliOptions, io: CliIo): Promise<number> {
  const log = await readLog(options.log);
  const clientConfig = commandClientConfig(options);
  const sqs = new SQSClient(clientConfig.sqs);
  const dynamodb = new DynamoDBClient(clientConfig.common);
  const progress = createProgressReporter({
    stream: io.stderr,
    interactive: io.stderr.isTTY === true,
    now: () => Date.now(),
  });
  try {
    const result = await doubleTap({
      log,
      queueUrl: options.queueUrl,
      tables: options.tables,
      sqs,
      dynamodb,
      timeoutSeconds: options.timeoutSeconds,
      pollIntervalMillis: options.pollIntervalMillis,
      stablePolls: options.stablePolls,
      dedupWindowSeconds: options.dedupWindowSeconds,
      onProgress: progress.report,
    });
    progress.end();
    if (options.json) {
      io.stdout.write(formatJsonReport(result));
    } else {
      if (result.changed) io.stdout.write(`${formatDifferences(result.differences)}\n\n`);
      io.stdout.write(`${formatVerdict(result)}\n`);
    }
    return result.changed ? EXIT.changed : EXIT.unchanged;
  } finally {
    progress.end();
    sqs.destroy();
    dynamodb.destroy();
  }
}

async function readLog(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'unknown error';
    throw new ReplayError('USAGE', `Cannot read the log file \`${path}\` (${code})`, { cause: error });
  }
}
