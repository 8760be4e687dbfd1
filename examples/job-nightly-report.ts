/**
 * A nightly job on an EventBridge schedule, run once per night however often it is triggered:
 * an overlapping or retried invocation of the same night does nothing, and a run that crashed
 * is resumed from its last checkpoint by the next trigger once its lease has ended.
 */
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import {
  createJobGuard,
  type JobResult,
  type ScheduledEvent,
  scheduledEventSlot,
} from 'effectively-once/jobs';

const client = DynamoDBDocumentClient.from(new DynamoDBClient({}), {
  marshallOptions: { removeUndefinedValues: true },
});

const guard = createJobGuard({
  consumer: 'reports',
  client,
  tableName: 'inbox',
  // Short lease, kept alive by every checkpoint: a crash is taken over within 2 minutes.
  leaseMillis: 2 * 60 * 1000,
});

const PAGES = 20;

/** Stands in for the real export. */
async function exportPage(page: number): Promise<number> {
  return page * 100;
}

export const handler = async (event: ScheduledEvent): Promise<JobResult<{ rows: number }>> =>
  guard.run({ job: 'nightly-report', slot: scheduledEventSlot(event, 24 * 60 * 60) }, async (run) => {
    const saved = await run.loadCheckpoint<{ page: number; rows: number }>();
    let { page, rows } = saved ?? { page: 0, rows: 0 };
    for (; page < PAGES; page += 1) {
      rows += await exportPage(page);
      await run.saveCheckpoint({ page: page + 1, rows });
    }
    return { rows };
  });
