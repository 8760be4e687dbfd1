/**
 * `effectively-once local logs`: the functions' output and failed invocations read from the
 * emulator's log as MiniStack 1.5.33 writes it (the excerpt below is of a real run, names shortened),
 * so a handler's start-up error is one command away instead of a search through that log.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { parseLocalArgs, runLocal } from '../../../../cli/local/command';
import { writeEmulatorState } from '../../../../cli/local/emulator';
import { formatFunctionLogs, parseFunctionLogs } from '../../../../cli/local/function-logs';
import { capturedLocalIo } from '../../../support/cli';

const LOG = [
  '2026-12-02 01:43:09 INFO [lambda] ESM: Lambda Shop-Projector-F69B processed 6 DynamoDB stream records from Shop-Orders-A9B6',
  '2026-12-02 01:43:10 INFO [lambda_runtime] Lambda worker spawned for Shop-Relay-96C3 (nodejs24.x, cold start)',
  '2026-12-02 01:43:10 WARNING [lambda] ESM: Lambda Shop-Relay-96C3 failed processing DynamoDB stream batch from Shop-Outbox-E1D0 (errorType=Runtime.HandlerError errorMessage=Injected crash after publishing event 72e6, before the checkpoint)',
  '{"level":"info","message":"Outbox relay: published","relay":"order-events-relay","eventId":"72e6"}',
  '{"_aws":{"Timestamp":1796175790440},"Consumer":"order-events-relay","Published":0,"Retry":1}',
  '2026-12-02 01:43:12 INFO [lambda] ESM: Lambda Shop-Orders-B683 output:',
  '{"level":"error","message":"Expected `dedupKey` to be a key source, got `undefined`","code":"INVALID_OPTIONS"}',
  '',
  '2026-12-02 01:43:13 WARNING [lambda] ESM: Lambda Shop-Orders-B683 failed processing SQS batch from Shop-OrdersQueue-5B6C (errorType=EffectivelyOnceError errorMessage=Expected `dedupKey` to be a key source, got `undefined`)',
  '2026-12-02 01:43:14 ERROR [lambda] Lambda Shop-Payments-77AA spawn error: worker exited',
  '2026-12-02 01:43:15 INFO [sqs] ReceiveMessage on Shop-OrdersQueue-5B6C',
].join('\n');

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe('parseFunctionLogs', () => {
  it("reads each function's output lines and each failed invocation, and nothing of the emulator's own lines", () => {
    expect(parseFunctionLogs(LOG)).toEqual([
      {
        time: '2026-12-02 01:43:10',
        functionName: 'Shop-Relay-96C3',
        kind: 'failure',
        text: 'Runtime.HandlerError: Injected crash after publishing event 72e6, before the checkpoint (DynamoDB stream batch from Shop-Outbox-E1D0)',
      },
      {
        time: '2026-12-02 01:43:10',
        functionName: 'Shop-Relay-96C3',
        kind: 'output',
        text: '{"level":"info","message":"Outbox relay: published","relay":"order-events-relay","eventId":"72e6"}',
      },
      {
        time: '2026-12-02 01:43:10',
        functionName: 'Shop-Relay-96C3',
        kind: 'output',
        text: '{"_aws":{"Timestamp":1796175790440},"Consumer":"order-events-relay","Published":0,"Retry":1}',
      },
      {
        time: '2026-12-02 01:43:12',
        functionName: 'Shop-Orders-B683',
        kind: 'output',
        text: '{"level":"error","message":"Expected `dedupKey` to be a key source, got `undefined`","code":"INVALID_OPTIONS"}',
      },
      {
        time: '2026-12-02 01:43:13',
        functionName: 'Shop-Orders-B683',
        kind: 'failure',
        text: 'EffectivelyOnceError: Expected `dedupKey` to be a key source, got `undefined` (SQS batch from Shop-OrdersQueue-5B6C)',
      },
      {
        time: '2026-12-02 01:43:14',
        functionName: 'Shop-Payments-77AA',
        kind: 'failure',
        text: 'spawn error: worker exited',
      },
    ]);
  });

  it('shows the functions named by part of their name, or their failures only', () => {
    const entries = parseFunctionLogs(LOG);
    expect(formatFunctionLogs(entries, { functions: ['Orders'], failuresOnly: true })).toBe(
      '2026-12-02 01:43:13 Shop-Orders-B683  FAILED EffectivelyOnceError: Expected `dedupKey` to be a key source, got `undefined` (SQS batch from Shop-OrdersQueue-5B6C)\n',
    );
    expect(formatFunctionLogs(entries, { functions: [], failuresOnly: false }).split('\n')).toHaveLength(7);
    expect(formatFunctionLogs(entries, { functions: ['Nope'], failuresOnly: false })).toBe('');
  });
});

describe('local logs', () => {
  const io = (cwd: string) => capturedLocalIo({}, cwd);

  it('parses its function names and --failures, which goes with logs only', () => {
    expect(parseLocalArgs(['logs', 'Orders', '--failures'])).toEqual({
      kind: 'logs',
      cacheDir: undefined,
      functions: ['Orders'],
      failuresOnly: true,
    });
    expect(() => parseLocalArgs(['deploy', '--failures'])).toThrow(
      '`--failures` only goes with `local logs`',
    );
  });

  it("prints the failures of this app's emulator log, naming the file, even when the emulator has stopped", async () => {
    const home = mkdtempSync(join(tmpdir(), 'eo-local-logs-'));
    dirs.push(home);
    const logFile = join(home, 'ministack.log');
    writeFileSync(logFile, LOG);
    writeEmulatorState(home, {
      pid: 4_194_304 + 7,
      port: 41234,
      endpoint: 'http://127.0.0.1:41234',
      region: 'us-east-1',
      version: '1.5.33',
      logFile,
      startedAt: '2026-12-02T01:40:00.000Z',
    });
    const run = io(home);
    expect(await runLocal({ kind: 'logs', cacheDir: home, functions: [], failuresOnly: true }, run.io)).toBe(
      0,
    );
    expect(run.stderr).toEqual([`Function output and failed invocations from ${logFile}:\n`]);
    expect(run.stdout.join('')).toContain(
      'Shop-Orders-B683  FAILED EffectivelyOnceError: Expected `dedupKey`',
    );
  });

  it('says how to start one when no emulator was started for the app', async () => {
    const home = mkdtempSync(join(tmpdir(), 'eo-local-logs-'));
    dirs.push(home);
    await expect(
      runLocal({ kind: 'logs', cacheDir: home, functions: [], failuresOnly: false }, io(home).io),
    ).rejects.toMatchObject({
      code: 'NO_EMULATOR',
      message: 'No emulator was started for this app: run `effectively-once local up` first.',
    });
  });
});
