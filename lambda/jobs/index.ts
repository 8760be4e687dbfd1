/**
 * effectively-once for scheduled jobs and replayed batches: run each slot once, on the same
 * inbox table as the SQS handlers.
 *
 * @module effectively-once/jobs
 */
export {
  CHECKPOINT_EFFECT,
  type Checkpoint,
  type CheckpointOptions,
  type CheckpointSaveResult,
  createCheckpoint,
} from './checkpoint';
export {
  createJobGuard,
  DEFAULT_JOB_LEASE_MILLIS,
  DEFAULT_JOB_TTL_SECONDS,
  type JobGuard,
  type JobGuardOptions,
  type JobGuardStore,
  type JobResult,
  type JobRun,
  type JobSlot,
  jobSlotKey,
} from './job-guard';
export { type ScheduledEvent, scheduledEventSlot, toScheduleSlot } from './schedule-slot';
