import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatWorkerSwitch } from '../../../../scripts/main-job/report';
import { loadSampleLogs } from '../../../../scripts/main-job/sample-logs';
import {
  checkWorkerSwitch,
  type WorkerSwitchResult,
  withTimeout,
} from '../../../../scripts/main-job/worker-switch';
import { outcomeTotals } from '../../../support/fixtures';

const logs = loadSampleLogs(join(__dirname, '..', '..', '..', '..'));
const clean: WorkerSwitchResult = {
  mappingsTurnedOff: 1,
  sent: 11,
  expectedDeliveries: 9,
  worker: outcomeTotals({ duplicate: 8, permanent: 1, invocations: 3 }),
  lambda: outcomeTotals({}),
  exit: { code: 0, signal: null },
  differences: [],
  bodiesInOutput: 0,
  millis: 2000,
};

describe('the main job’s worker switch', () => {
  it('holds every check when the worker finds only duplicates and the poison line, and stops cleanly', () => {
    expect(checkWorkerSwitch(logs, clean).filter((check) => !check.ok)).toEqual([]);
    expect(formatWorkerSwitch(clean)).toContain('0 processed, 8 duplicate, 1 dead-lettered, 0 retried');
    expect(formatWorkerSwitch(clean)).toContain('identical');
  });

  it('fails on a reprocessed event, a changed table, a body in the output, a Lambda still polling or an unclean exit', () => {
    const failed = (result: Partial<WorkerSwitchResult>) =>
      checkWorkerSwitch(logs, { ...clean, ...result })
        .filter((check) => !check.ok)
        .map((check) => check.name);

    expect(failed({ worker: outcomeTotals({ processed: 1, duplicate: 7, permanent: 1 }) })).toEqual([
      'orders on the worker: 9 deliveries, none processed again, 8 suppressed by the inbox',
    ]);
    expect(
      failed({ differences: [{ table: 'Orders', key: {}, kind: 'changed', path: 'status' } as never] }),
    ).toEqual(['orders on the worker: Orders and inbox tables unchanged']);
    expect(failed({ bodiesInOutput: 1 })).toEqual([
      'orders on the worker: no message body in the worker output',
    ]);
    expect(failed({ lambda: outcomeTotals({ duplicate: 2 }), mappingsTurnedOff: 0 })).toEqual([
      'orders on the worker: the Lambda event source mapping turned off',
      'orders on the worker: the Lambda received nothing while switched off',
    ]);
    expect(failed({ exit: { code: null, signal: 'SIGKILL' } })).toEqual([
      'orders on the worker: stopped by SIGTERM with exit code 0',
    ]);
  });
});

describe('withTimeout', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('resolves with the work and leaves no timer behind, so npm start exits at its last line', async () => {
    vi.useFakeTimers();
    const result = await withTimeout(Promise.resolve('exited'), 15_000, () => 'timed out');

    expect(result).toBe('exited');
    expect(vi.getTimerCount()).toBe(0);
  });

  it('resolves with the fallback once the time is up', async () => {
    vi.useFakeTimers();
    const waiting = withTimeout(new Promise<string>(() => {}), 15_000, () => 'timed out');
    await vi.advanceTimersByTimeAsync(15_000);

    expect(await waiting).toBe('timed out');
    expect(vi.getTimerCount()).toBe(0);
  });
});
