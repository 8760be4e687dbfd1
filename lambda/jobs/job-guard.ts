/**
 * `createJobGuard`: runs a scheduled job (or a replayed batch) at most once per slot, on the
 * same inbox table as the SQS handlers. A run claims `<job>:<slot>` with a lease (`claimLease`);
 * an overlapping or restarted run of the same slot does nothing; a crashed run's slot is taken
 * over once its lease ends, optionally resuming from a checkpoint; a completed slot is never run
 * again while its record lives.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { INBOX_STATUS } from '../core/contract';
import { isValidName, type KeyPart, NAME_PATTERN, scopeKey, toDedupKey, toKeyPart } from '../core/dedup-key';
import {
  expectLeaseWithinTtl,
  expectPortOption,
  positiveOption,
  resolveLogOption,
} from '../core/entry-options';
import { EffectivelyOnceError, errorFields, expectOption } from '../core/errors';
import { readExistingRecord } from '../core/existing-record';
import { fingerprintOf } from '../core/fingerprint';
import { createLeaseClaim } from '../core/lease-claim';
import type { Logger, LogLevel } from '../core/logger';
import { errorMessageField } from '../core/outcome';
import type { InboxRecord, LeaseStore, MarkerStore } from '../core/store-port';
import type { Clock } from '../core/time';
import { createDynamoDbStore } from '../store/dynamodb-store';
import { CHECKPOINT_EFFECT, type Checkpoint, createCheckpoint } from './checkpoint';

/** Default lease: 15 minutes, the longest a Lambda invocation runs. */
export const DEFAULT_JOB_LEASE_MILLIS = 15 * 60 * 1000;
/** Default lifetime of a completed slot's record: 7 days (EventBridge retries for up to 24 hours). */
export const DEFAULT_JOB_TTL_SECONDS = 7 * 24 * 60 * 60;

/** The store capability a job guard uses: claims with a lease, and the checkpoint's insert. */
export type JobGuardStore = LeaseStore & Pick<MarkerStore, 'insert'>;

/** Every method of `JobGuardStore`, checked on an injected store at creation. */
const JOB_STORE_METHODS: readonly (keyof JobGuardStore)[] = [
  'claimLease',
  'complete',
  'release',
  'extendLease',
  'insert',
  'replace',
];

/** Options of {@link createJobGuard}. */
export interface JobGuardOptions {
  /** Name scoping every key (like an SQS consumer name); matches `/^[A-Za-z0-9._:-]{1,100}$/`. */
  readonly consumer: string;
  /**
   * How long a run holds its slot before another run may take it over (a crashed run). Extend it
   * with `run.extendLease()` or `run.saveCheckpoint()` in long runs. Must be shorter than
   * `ttlSeconds` (`INVALID_OPTIONS` otherwise); the slot's record lives `ttlSeconds` past the
   * lease end while in progress, and every extension moves both.
   * @default 900000 (15 minutes)
   */
  readonly leaseMillis?: number;
  /**
   * How long a completed slot is remembered (`expiresAt`). Cover the longest a late or replayed
   * trigger of the same slot can arrive.
   * @default 604800 (7 days)
   */
  readonly ttlSeconds?: number;
  /**
   * The inbox store. Give either this, or `client` and `tableName`.
   * @default the DynamoDB store over `client` and `tableName`
   */
  readonly store?: JobGuardStore;
  /** The document client, created once at module scope. Used when `store` is not given. */
  readonly client?: DynamoDBDocumentClient;
  /** Name of the inbox table. Used when `store` is not given. */
  readonly tableName?: string;
  /**
   * Epoch milliseconds now.
   * @default Date.now
   */
  readonly clock?: Clock;
  /**
   * Lowest level logged; `silent` logs nothing.
   * @default 'info'
   */
  readonly logLevel?: LogLevel;
  /** @default JSON lines on standard output */
  readonly logger?: Logger;
  /**
   * Log the message of an error the job's work throws (`errorMessage`), as well as its class.
   * Off, only the class and the toolkit's code are logged: such messages may quote data.
   * @default false
   */
  readonly logErrorMessages?: boolean;
}

/** Which slot of which job a run is for. */
export interface JobSlot {
  /** The job's name, for example `nightly-report`. */
  readonly job: string;
  /** The slot: a scheduled time (`toScheduleSlot`), a batch id, a date. */
  readonly slot: KeyPart;
}

/** The run in progress, handed to the job's work. */
export interface JobRun {
  /** The job's name. */
  readonly job: string;
  /** The slot being run (for example `2024-05-01`). */
  readonly slot: string;
  /** `true` when this run took the slot over from a run whose lease ended (it crashed). */
  readonly takeover: boolean;
  /** Epoch milliseconds when the current lease ends. */
  leaseExpiresAt(): number;
  /**
   * Moves the lease end to now + `leaseMillis`, and the record's `expiresAt` to `ttlSeconds`
   * after it (never backwards). Throws (code `IN_FLIGHT`) when another run has
   * taken the slot over: stop working; `run()` then answers `{ ran: false, reason: 'lease-lost' }`.
   * Call it before a step whose effect must not repeat: a run that stalled past its lease (and
   * was taken over) then stops before the effect instead of after it.
   */
  extendLease(): Promise<void>;
  /** The value the last run of this slot saved with `saveCheckpoint`, `undefined` when none. */
  loadCheckpoint<T = unknown>(): Promise<T | undefined>;
  /**
   * Extends the lease, then saves `value` (small, JSON-like) as the slot's checkpoint. Throws
   * like `extendLease` when another run has taken the slot over.
   */
  saveCheckpoint(value: unknown): Promise<void>;
}

/** What `run()` did. */
export type JobResult<T> =
  | {
      /** The work ran to the end. */
      readonly ran: true;
      /** What the work returned. */
      readonly result: T;
      /** True when this run took over a crashed run's slot. */
      readonly takeover: boolean;
    }
  | {
      /** Nothing ran. */
      readonly ran: false;
      /** The slot already completed. */
      readonly reason: 'completed';
    }
  | {
      /** Nothing ran. */
      readonly ran: false;
      /** Another run holds the slot. */
      readonly reason: 'in-progress';
      /** Epoch milliseconds when the other run's lease ends. */
      readonly leaseExpiresAt: number;
    }
  | {
      /** This run stopped. */
      readonly ran: false;
      /** Another run took the slot over while this one worked. */
      readonly reason: 'lease-lost';
    };

/** The guard: one per job module, created at module scope. */
export interface JobGuard {
  /**
   * Runs `work` unless the slot completed or another run holds it. A thrown error releases the
   * slot (a checkpoint stays) so a retry can run, and is rethrown.
   */
  run<T>(slot: JobSlot, work: (run: JobRun) => T | Promise<T>): Promise<JobResult<T>>;
}

/**
 * Creates a guard that runs each job slot once. The slot's inbox record is claimed with a
 * lease and an owner token; `complete` marks it done (fenced by the owner), a failure releases
 * it (kept with its fingerprint and lease end `0`, so a retry of the slot claims it again in one
 * request). An overlapping run gets `{ ran: false, reason: 'in-progress' }`, a later one
 * `{ ran: false, reason: 'completed' }`. Options are validated here; a bad option throws
 * `INVALID_OPTIONS`.
 *
 * @example
 * const guard = createJobGuard({ consumer: 'reports', client, tableName: 'inbox' });
 *
 * export const handler = async (event: ScheduledEvent) =>
 *   guard.run({ job: 'nightly-report', slot: scheduledEventSlot(event, 86400) }, async (run) => {
 *     const done = (await run.loadCheckpoint<number>()) ?? 0;
 *     for (let page = done; page < pages; page += 1) {
 *       await exportPage(page);
 *       await run.saveCheckpoint(page + 1);
 *     }
 *   });
 */
export function createJobGuard(options: JobGuardOptions): JobGuard {
  expectOption(typeof options === 'object' && options !== null, 'options', 'an object', options);
  const { consumer } = options;
  expectOption(isValidName(consumer), 'consumer', `a name matching ${NAME_PATTERN}`, consumer);
  const leaseMillis = positiveOption('leaseMillis', options.leaseMillis, DEFAULT_JOB_LEASE_MILLIS);
  const ttlSeconds = positiveOption('ttlSeconds', options.ttlSeconds, DEFAULT_JOB_TTL_SECONDS);
  expectLeaseWithinTtl(leaseMillis, ttlSeconds);
  expectOption(
    options.clock === undefined || typeof options.clock === 'function',
    'clock',
    'a function returning epoch milliseconds',
    options.clock,
  );
  expectOption(
    options.logErrorMessages === undefined || typeof options.logErrorMessages === 'boolean',
    'logErrorMessages',
    'a boolean',
    options.logErrorMessages,
  );
  const log = resolveLogOption(options);
  if (options.store !== undefined) expectPortOption('store', options.store, JOB_STORE_METHODS);
  const store: JobGuardStore =
    options.store ?? createDynamoDbStore({ client: options.client!, tableName: options.tableName! });
  const clock = options.clock ?? Date.now;

  return {
    async run<T>(target: JobSlot, work: (run: JobRun) => T | Promise<T>): Promise<JobResult<T>> {
      expectOption(isValidName(target?.job), 'job', `a name matching ${NAME_PATTERN}`, target?.job);
      expectOption(typeof work === 'function', 'work', 'a function', work);
      const slot = toKeyPart(target.slot);
      const dedupKey = toDedupKey([target.job, slot]);
      const pk = scopeKey(consumer, dedupKey);
      const fields = { consumer, job: target.job, slot, scopedKey: pk };
      const now = clock();
      const fingerprint = fingerprintOf({ job: target.job, slot });
      const lease = createLeaseClaim(store, { pk, fingerprint, consumer, leaseMillis, ttlSeconds }, now);
      const { owner } = lease;

      const claimed = await lease.claim();
      if (claimed.kind === 'existing') {
        const skipped = skippedRun(claimed.record, fingerprint, now);
        if (skipped.reason === 'in-progress') {
          log({
            level: 'info',
            message: 'Job slot in progress in another run; skipped',
            ...fields,
            outcome: 'in-flight',
          });
        } else {
          log({
            level: 'info',
            message: 'Job slot already completed; skipped',
            ...fields,
            outcome: 'duplicate',
          });
        }
        return skipped;
      }
      const takeover = claimed.takeover === true;
      if (takeover) {
        log({
          level: 'warn',
          message: 'Lease of a crashed job run taken over',
          ...fields,
          outcome: 'takeover',
        });
      }

      let leaseLost = false;
      let checkpoint: Checkpoint | undefined;
      const lost = (): EffectivelyOnceError => {
        leaseLost = true;
        const error = new EffectivelyOnceError(
          'IN_FLIGHT',
          `Another run took over job \`${target.job}\` slot \`${slot}\`; stop working`,
        );
        Object.defineProperty(error, 'name', { value: 'LeaseLostError' });
        return error;
      };
      const checkpointOf = (): Checkpoint => {
        checkpoint ??= createCheckpoint({
          store,
          pk: scopeKey(consumer, dedupKey, CHECKPOINT_EFFECT),
          consumer,
          owner,
          clock,
          ttlSeconds,
        });
        return checkpoint;
      };
      const extendLease = async (): Promise<void> => {
        if (leaseLost) throw lost();
        // The TTL moves with the lease: the slot's record never expires while this run works.
        if ((await lease.extend(clock())).kind === 'lost-ownership') throw lost();
      };
      const run: JobRun = {
        job: target.job,
        slot,
        takeover,
        leaseExpiresAt: () => lease.leaseExpiresAt,
        extendLease,
        loadCheckpoint: async <V>() => (await checkpointOf().load()) as V | undefined,
        async saveCheckpoint(value) {
          await extendLease();
          if ((await checkpointOf().save(value)) === 'lost-ownership') throw lost();
        },
      };

      let result: T;
      try {
        result = await work(run);
      } catch (error) {
        if (leaseLost) {
          log({
            level: 'warn',
            message: 'Job run stopped: its slot was taken over',
            ...fields,
            outcome: 'in-flight',
          });
          return { ran: false, reason: 'lease-lost' };
        }
        try {
          await lease.release();
        } catch (releaseError) {
          log({
            level: 'error',
            message: 'Releasing the job slot failed: it can run again once the lease ends',
            ...fields,
            errorName: (releaseError as Error | undefined)?.name,
          });
        }
        log({
          level: 'error',
          message: 'Job run failed; the slot is released so a retry can run',
          ...fields,
          outcome: 'retry',
          ...errorFields(error, 'HANDLER_FAILED'),
          ...errorMessageField(error, options.logErrorMessages),
        });
        throw error;
      }

      const completed = await lease.complete(clock());
      if (completed.kind === 'lost-ownership') {
        log({
          level: 'warn',
          message: 'The lease ended before the job run completed; another run took the slot over',
          ...fields,
          outcome: 'processed',
        });
      } else {
        log({ level: 'info', message: 'Job run completed', ...fields, outcome: 'processed' });
        try {
          await checkpoint?.clear();
        } catch (error) {
          // The checkpoint expires with its TTL; a completed slot never reads it again.
          log({
            level: 'warn',
            message: 'Clearing the checkpoint failed',
            ...fields,
            errorName: (error as Error)?.name,
          });
        }
      }
      return { ran: true, result, takeover };
    },
  };
}

/**
 * What a run answers when `record` holds its slot, from the reading of the record: an expired
 * record throws `EXPIRED_RECORD` (retry the run), a completed slot is `completed`, a claim in
 * progress (running, lease ended but not taken over, released) is `in-progress` until its lease
 * end.
 */
function skippedRun(
  record: InboxRecord,
  fingerprint: string,
  nowMillis: number,
): Extract<JobResult<never>, { readonly ran: false; readonly reason: 'completed' | 'in-progress' }> {
  const reading = readExistingRecord(record, fingerprint, nowMillis);
  switch (reading.kind) {
    case 'expired':
      throw new EffectivelyOnceError(
        'EXPIRED_RECORD',
        'The store returned an expired job record; retry the run',
      );
    case 'completed':
      return { ran: false, reason: 'completed' };
    case 'in-flight':
      return { ran: false, reason: 'in-progress', leaseExpiresAt: reading.leaseExpiresAt ?? nowMillis };
    case 'lease-ended':
      return { ran: false, reason: 'in-progress', leaseExpiresAt: reading.leaseExpiresAt };
    case 'released':
      // Another run of the slot claims it again now; its lease end reads `0`, as stored.
      return { ran: false, reason: 'in-progress', leaseExpiresAt: 0 };
    case 'mismatch':
      // A slot's fingerprint derives from its key, so another payload's record under the key was
      // not written by a job guard: the run skips it by its status and never runs over it.
      return record.status === INBOX_STATUS.inProgress
        ? { ran: false, reason: 'in-progress', leaseExpiresAt: record.leaseExpiresAt ?? nowMillis }
        : { ran: false, reason: 'completed' };
  }
}

/** The scoped key of a job slot, for operators looking up its inbox record. */
export function jobSlotKey(consumer: string, slot: JobSlot): string {
  return scopeKey(consumer, toDedupKey([slot.job, toKeyPart(slot.slot)]));
}
