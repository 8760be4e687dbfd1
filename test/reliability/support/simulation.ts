/**
 * One seed of the fault-injection suite: a seeded plan of messages (duplicates, concurrent
 * duplicates, resends long after, poison input, keys reused with another payload), a simulated
 * SQS queue feeding simulated Lambda instances that run the real `createSqsHandler` over the
 * real DynamoDB store on the local emulator, and faults injected at every step.
 *
 * What is simulated and what is real:
 * - real: the toolkit (options, batch processor, store), the SDK clients and their middleware
 *   stacks, DynamoDB (the emulator, the only arbiter of races);
 * - simulated: SQS (`simulated-queue.ts`: visibility timeout, receive counts, redrive to the
 *   dead-letter queue after `maxReceiveCount`), the Lambda runtime (one invocation at a time
 *   per instance, except the first two instances of a seed, which run three and two at once on
 *   one handler object in one process as Lambda Managed Instances do; the partial batch
 *   response applied as SQS would, a crashed invocation's response discarded, and a crash
 *   killing every invocation of its process), each instance's clock (skewed by up to 5 s; an "expiry" redelivery
 *   sees a clock beyond the record TTL, and, standing for a moment that far ahead, runs only
 *   while nothing else of its key runs, and every later delivery of its key happens that far
 *   ahead too), and in two-phase seeds the downstream service the
 *   effects call (idempotent by the derived `idempotencyKey`).
 *
 * Faults (each a pure function of the seed and of what is decided, so a seed replays the same
 * faults whatever the interleaving of requests; the racing conflict also depends on which
 * invocations run at once):
 * - per delivered record: throttling (before the request is applied, or after: the write
 *   happened, the caller sees the throttling error; each throttle answers with one of the three
 *   codes DynamoDB documents, drawn per request), a transaction conflict, a lost response (the write
 *   happened, the caller sees a connection reset), a crash before the claim, a crash after the
 *   claim (the write happened, the process dies before seeing the answer), a crash after the
 *   record's outcome is decided (after the commit, before the acknowledgement), in marker and
 *   two-phase modes a crash during the effect (after the effect reached DynamoDB or the
 *   downstream service), and in two-phase mode a lost answer from the downstream service (the
 *   effect happened, the call fails, the claim is released); a claim whose response is lost
 *   and sent again at once by the SDK, or answered and landing again late (after the next step
 *   on its record); in marker and two-phase modes an effect failing before it happens (the
 *   claim is released); in two-phase mode a slow effect whose heartbeat is held on the network
 *   until the effect failed or completed (`delayed-heartbeat`);
 * - per inbox update (release, complete, heartbeat): the response lost and the SDK's retry sent
 *   at once, a late duplicate landing after the next step on the record, or a throttle before
 *   or after the update was applied (`UPDATE_FAULTS`);
 * - per commit (`TransactWriteItems`) while another running invocation has a delivery of one of
 *   its keys: a `TransactionConflict` on that key's marker (`RACING_CONFLICT_CHANCE`);
 * - per invocation: a crash while the batch response is being built (at the metrics sink,
 *   called just before the response is returned), a deadline too close to start anything, or
 *   Lambda killing it at its timeout as it is about to send its n-th request (no response: its
 *   whole batch comes back after the visibility timeout; the requests it has in flight land,
 *   answered to nobody; its process starts again with a new handler);
 * - per dead-letter send (`direct` mode): the send fails.
 * A message on its 4th receive or later runs in an invocation without faults, so no valid
 * message can exhaust `maxReceiveCount` (5): a valid message in the dead-letter queue is a bug,
 * except one planned with a downstream outage, which fails on every delivery until the queue
 * drained, ends in the dead-letter queue half-completed (directly with a permanent failure in
 * `direct` seeds, by the redrive policy otherwise) and is redriven with a new message id and
 * deduplication id. Plans also hold messages whose record expires while their effect runs
 * (`expiryMidEffect`), and keys beyond 2^53 or with lone surrogates; see `planMessages`.
 *
 * What stays per invocation, checked as the run goes (`runtimeViolations`): each log line names a
 * message of its own invocation's batch, the counts an invocation publishes hold one outcome per
 * message of its batch and no more cache hits than duplicates, and a heartbeat extends only a
 * claim its own invocation sent; concurrent invocations on one handler must not leak into each
 * other.
 *
 * A seed may run on a FIFO queue (`queue: 'fifo'`, `simulated-queue.ts`): every copy carries its
 * message's group (`fifoGroupOf`), the queue deduplicates the copies sent again within 5 minutes
 * (the plan predicts which, `fifoDeduplicatedCopies`, and the oracle gets the messages it
 * accepted, `fifoAccepted`), resends wait 1 to 8 minutes and expiry redeliveries come after the
 * interval, and each applied effect carries the group and sequence number of the record that
 * applied it, for the history checker's `orderPerGroup`.
 *
 * Half the seeds run with the completed-record cache on (`seedProfile`): each simulated instance
 * has its own, as each Lambda execution environment does, a redelivery lands on whichever
 * instance is idle, and an instance whose invocation crashed starts again cold, its cache empty.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { UpdateCommand } from '@aws-sdk/lib-dynamodb';
import { fromBody, scopeKey } from '../../../lambda/core/dedup-key';
import { PermanentError } from '../../../lambda/core/errors';
import { fingerprintOf } from '../../../lambda/core/fingerprint';
import type { LogEntry, Logger } from '../../../lambda/core/logger';
import type { MetricsSink, OutcomeCounts } from '../../../lambda/core/metrics';
import type { DeadLetterMessage, DeadLetterSender } from '../../../lambda/dead-letter/dead-letter-message';
import { toDeadLetterAttributes } from '../../../lambda/dead-letter/sqs-dead-letter-sender';
import { atomic } from '../../../lambda/modes/atomic';
import { entity } from '../../../lambda/modes/entity';
import { marker } from '../../../lambda/modes/marker';
import { twoPhase } from '../../../lambda/modes/two-phase';
import { fromDeduplicationId } from '../../../lambda/sqs/key-sources';
import type {
  SqsBatchResponse,
  SqsHandler,
  SqsMessageAttribute,
  SqsRecord,
} from '../../../lambda/sqs/sqs-event';
import { createSqsHandler } from '../../../lambda/sqs/sqs-handler';
import { toSqsRecord } from '../../../lambda/worker/sqs-record';
import {
  attachFaultInjection,
  type DynamoRequest,
  type FaultController,
  type InboxUpdate,
  pkOf,
  type RequestFault,
  type RequestRole,
  rolesOf,
  SimulatedCrash,
  THROTTLE_CODES,
  type ThrottleCode,
  writesOn,
} from './fault-injection';
import { createHistory, type HistoryEntry } from './history';
import { chanceOf, createRandom, type Random } from './prng';
import {
  claimRequestFault,
  createCapturingDeadLetterSender,
  createCrashingMetrics,
  drawFault,
  losesClaimResponse,
} from './simulated-lambda';
import {
  createSimulatedQueue,
  FIFO_DEDUPLICATION_WINDOW_MILLIS,
  type ReceivedMessage,
  type SimulatedQueue,
  sqsRecordOf,
} from './simulated-queue';
import { createLocalClient, type LocalClient } from './tables';

/** Which toolkit mode a seed runs. */
export type Mode = 'atomic' | 'marker' | 'entity' | 'two-phase';

/** Two-phase seeds run these effects, in this order, each under its own inbox record. */
export const TWO_PHASE_EFFECTS = ['charge', 'notify'] as const;
/**
 * Two-phase lease: shorter than the visibility timeout, so a crashed claim is taken over on
 * redelivery, and shorter than twice the largest skew, so an instance whose clock runs ahead
 * may take over a claim whose owner is still running (the "possibly twice" case, fenced by the
 * owner token and deduplicated downstream by the derived idempotency key).
 */
export const LEASE_MILLIS = 8000;

/** How permanent failures reach the dead-letter queue. */
export type DeadLetterStyle = 'direct' | 'redrive';

/**
 * Where the dedup key comes from: the body's `id`, or the FIFO `MessageDeduplicationId` the
 * producer set to that id (`fromDeduplicationId`). A redrive gives a message a new
 * deduplication id, as AWS does, so a dedup-id consumer recognises a redriven message only by
 * what the direct dead-letter sender attached to it (issue 12 item 5).
 */
export type KeySourceStyle = 'body' | 'deduplication-id';

/** Inbox record lifetime in the simulation. */
export const TTL_SECONDS = 86_400;
/** How far an "expiry" redelivery's clock jumps ahead: twice the TTL, so every record is expired. */
export const EXPIRY_JUMP_MILLIS = 2 * TTL_SECONDS * 1000;
/**
 * The clock skew the toolkit is designed for: any two instances' clocks within 2 s of each
 * other (Lambda hosts keep NTP time, typically within milliseconds). The two-phase lease
 * (`LEASE_MILLIS`, 8 s) exceeds it fourfold, and a heartbeat every lease/3 keeps at least
 * two thirds of the lease (5.3 s) ahead of the owner's clock, so within the tolerance no live
 * owner is ever taken over because of skew.
 */
export const SKEW_TOLERANCE_MILLIS = 2000;
/**
 * The largest clock skew of an instance, either way: beyond the tolerance on purpose (two
 * instances up to 10 s apart, more than the lease). There two-phase degrades to at-least-once
 * executions, each explained by a takeover and deduplicated downstream, never to a duplicate
 * effect; the other modes only compare clocks with the record TTL (a day).
 */
export const MAX_SKEW_MILLIS = 5000;
/** Redrive policy of the simulated queue. */
export const MAX_RECEIVE_COUNT = 5;
/** From this receive on, a message runs in an invocation without injected faults. */
export const FAULT_FREE_FROM_RECEIVE = 4;
const VISIBILITY_TIMEOUT_MILLIS = 30_000;
const BATCH_SIZE = 10;

/** The kinds of planned message. */
export type MessageKind = 'valid' | 'conflict' | 'malformed' | 'missing-key' | 'big-key' | 'ill-formed-key';

/**
 * Big keys: numeric ids beyond 2^53, all within one block of 256 above 2^60, so any two of them
 * round to the same double. Distinct ids must be processed separately (lossless keys) or
 * dead-lettered as `INVALID_KEY`, never merged.
 */
export const BIG_KEY_BASE = 2n ** 60n;

/** One copy of a message as sent to the queue (a producer resend gets a new message id). */
export interface PlannedCopy {
  readonly messageId: string;
  /** Position in send order. */
  readonly position: number;
  readonly delayMillis: number;
  /** 1: an expiry redelivery, received alone by an instance whose clock is beyond the TTL. */
  readonly epoch: 0 | 1;
  readonly body: string;
  /**
   * Set on a copy a dead-letter redrive sends once the queue drained, with a new message id as
   * AWS gives redriven messages: the id of the copy it redrives (which must then be in the
   * dead-letter queue, or acknowledged for a completed message redriven again).
   */
  readonly redriveOf?: string;
  /**
   * The FIFO `MessageDeduplicationId`: the producer's id (the message's key) on the copies the
   * producer sent, a new one on a redriven copy; absent on poison input without a key.
   */
  readonly deduplicationId?: string;
}

/** One logical message: what the producer meant to send once. */
export interface PlannedMessage {
  readonly index: number;
  /** The index of the message whose key this one uses (its own index unless it reuses a key). */
  readonly keyIndex: number;
  readonly kind: MessageKind;
  /** The dedup key (body field `id`), absent for poison input without one. */
  readonly key?: string;
  readonly scopedKey?: string;
  /**
   * The inbox records the message's effects live under: the scoped key, or in two-phase mode
   * one record per effect (`scopeKey(consumer, key, effect)`).
   */
  readonly effectKeys?: readonly string[];
  readonly amount?: number;
  /** Fingerprint of the payload (canonical JSON: the same for every copy). */
  readonly fingerprint?: string;
  /** Gets an expiry redelivery: a second effect is legitimate in the new live window. */
  readonly expiry: boolean;
  /**
   * The code a dead-lettered copy must carry: always for poison input; for a keyed message only
   * when another payload won its key.
   */
  readonly expectedCode?: 'MALFORMED_BODY' | 'MISSING_KEY' | 'PAYLOAD_MISMATCH' | 'INVALID_KEY';
  /**
   * A downstream outage: every delivery before the redrive fails (marker: the effect; two-phase:
   * the second effect, after the first completed; atomic and entity: the handler), so every copy
   * ends in the dead-letter queue half-completed, and is redriven once the queue drained.
   */
  readonly outage: boolean;
  /** Two-phase: the record expires while the effect runs (its clock jumps a TTL ahead mid-effect). */
  readonly expiryMidEffect: boolean;
  /** `big-key`: the id's decimal digits as the producer sent them. */
  readonly bigKey?: string;
  /** FIFO seeds: the `MessageGroupId` every copy is sent with. */
  readonly group?: string;
  readonly copies: readonly PlannedCopy[];
}

/** What a seed runs. */
export interface SeedOptions {
  readonly seed: number;
  readonly messages: number;
  readonly mode: Mode;
  readonly deadLetter: DeadLetterStyle;
  readonly keySource: KeySourceStyle;
  readonly instances: number;
  readonly inboxTable: string;
  readonly businessTable: string;
  /** Virtual epoch milliseconds the queue starts at. */
  readonly startMillis: number;
  /** Test hook: lets a test break the store's protocol on purpose to prove the oracle sees it. */
  readonly tamper?: (client: LocalClient) => void;
  /** Each instance's handler keeps a completed-record cache of this many entries. @default off */
  readonly completedCacheEntries?: number;
  /** How atomic mode commits a batch (`atomic(handle, { commit })`). @default 'batch' */
  readonly atomicCommit?: 'batch' | 'message';
  /**
   * Test hook: wraps each instance's handler, to prove the oracle sees a handler that lets
   * concurrent invocations of one process share what is one invocation's.
   */
  readonly wrapHandler?: (handler: SqsHandler) => SqsHandler;
  /**
   * Test hook: a broken runtime that deletes the batch of an invocation killed at its timeout,
   * as if it had succeeded, to prove the oracle sees the messages it loses.
   */
  readonly acknowledgeTimedOut?: boolean;
  /** The chance that an invocation with faults is killed at its timeout. @default 0.01 */
  readonly timeoutChance?: number;
  /**
   * The queue type: `fifo` sends every message with a message group, deduplicates sends within
   * 5 minutes and holds a group back while one of its messages is in flight
   * (`simulated-queue.ts`), and the history checker's `orderPerGroup` runs on its groups.
   * @default 'standard'
   */
  readonly queue?: QueueType;
  /**
   * Test hook: wraps the queue a FIFO seed receives from, to prove the order check sees a queue
   * that hands a group's messages out of order.
   */
  readonly wrapQueue?: (queue: SimulatedQueue<PlannedCopyMeta>) => SimulatedQueue<PlannedCopyMeta>;
}

/** The SQS queue type a seed runs on. */
export type QueueType = 'standard' | 'fifo';

/** Entries of the completed-record cache in the seeds that turn it on. */
export const SEED_CACHE_ENTRIES = 1000;

/**
 * The mode and dead-letter style a seed runs: atomic in two seeds of five (seeds 2, 7, 12, ...
 * committing each batch in shared transactions, the default; seeds 5, 10, 15, ... one transaction
 * per message), marker, entity and two-phase in one each; a third of the seeds dead-letter by
 * redrive, the others directly. Seeds 5-9, 15-19, ... (every mode, both dead-letter styles, both
 * key sources, both atomic commits) turn the completed-record cache on.
 */
export function seedProfile(seed: number): {
  readonly mode: Mode;
  readonly deadLetter: DeadLetterStyle;
  readonly keySource: KeySourceStyle;
  readonly completedCacheEntries?: number;
  readonly atomicCommit?: 'batch' | 'message';
} {
  const modes: readonly Mode[] = ['atomic', 'marker', 'atomic', 'entity', 'two-phase'];
  const deadLetter = seed % 3 === 2 ? 'redrive' : 'direct';
  // Seeds 4, 12, 16, ... (direct dead-lettering) key by the FIFO deduplication id.
  const keySource = seed % 4 === 0 && deadLetter === 'direct' ? 'deduplication-id' : 'body';
  const cache = Math.floor(seed / 5) % 2 === 1 ? { completedCacheEntries: SEED_CACHE_ENTRIES } : {};
  const mode = modes[seed % modes.length]!;
  const commit = mode === 'atomic' ? ({ atomicCommit: seed % 5 === 0 ? 'message' : 'batch' } as const) : {};
  return { mode, deadLetter, keySource, ...cache, ...commit };
}

/**
 * The consumer name of a seed: every key of a seed is scoped by it, so seeds share tables (a FIFO
 * seed and the standard seed of its number too).
 */
export function consumerOf(seed: number, mode: Mode, queue: QueueType = 'standard'): string {
  return `rel-${queue === 'fifo' ? 'f' : 's'}${seed}-${mode}`;
}

/**
 * The message group of a FIFO seed's message: runs of three consecutive messages share a group
 * (so one batch often carries several messages of a group, and the engine's rule after a failure
 * in a group is exercised), and the runs go round about one group per eight messages, so a group
 * holds messages sent far apart too.
 */
export function fifoGroupOf(index: number, count: number): string {
  const groups = Math.max(2, Math.floor(count / 8));
  return `g${Math.floor(index / 3) % groups}`;
}

/** The deduplication id a FIFO queue deduplicates a copy by: the producer's, or the body's SHA-256. */
export function fifoDeduplicationIdOf(copy: Pick<PlannedCopy, 'deduplicationId' | 'body'>): string {
  return copy.deduplicationId ?? createHash('sha256').update(copy.body).digest('hex');
}

/**
 * The copies a FIFO queue accepts and never delivers: a copy the producer sends (at its delay
 * after the start) within 5 minutes of the last accepted send of its deduplication id. Copies a
 * redrive sends carry a new id. The queue decides the same at run time; the simulation checks
 * that it did (`runtimeViolations`).
 */
export function fifoDeduplicatedCopies(plans: readonly PlannedMessage[]): ReadonlySet<string> {
  const sends = plans
    .flatMap((plan) => plan.copies)
    .filter((copy) => copy.redriveOf === undefined)
    .sort((a, b) => a.delayMillis - b.delayMillis || a.position - b.position);
  const lastSent = new Map<string, number>();
  const deduplicated = new Set<string>();
  for (const copy of sends) {
    const id = fifoDeduplicationIdOf(copy);
    const last = lastSent.get(id);
    if (last !== undefined && copy.delayMillis - last < FIFO_DEDUPLICATION_WINDOW_MILLIS) {
      deduplicated.add(copy.messageId);
    } else lastSent.set(id, copy.delayMillis);
  }
  return deduplicated;
}

/**
 * The plan as a FIFO queue delivers it: without the copies it deduplicates (nor their redrives:
 * they never reached the dead-letter queue), and without the messages left with no copy (a
 * producer duplicate of another message's deduplication id, as a payload reusing a key within 5
 * minutes is: SQS drops it, so it is no input of the consumer's).
 */
export function fifoAccepted(plans: readonly PlannedMessage[]): PlannedMessage[] {
  const deduplicated = fifoDeduplicatedCopies(plans);
  return plans.flatMap((plan) => {
    const copies = plan.copies.filter(
      (copy) => !deduplicated.has(copy.messageId) && !deduplicated.has(copy.redriveOf ?? ''),
    );
    return copies.length === 0 ? [] : [{ ...plan, copies }];
  });
}

function serialise(payload: Record<string, unknown>, random: Random): string {
  // Each copy is serialised afresh, keys in any order, as a producer resend would be: the
  // fingerprint is canonical, so all copies still carry the same payload.
  const entries = random.shuffle(Object.entries(payload));
  return JSON.stringify(Object.fromEntries(entries), null, random.chance(0.2) ? 1 : undefined);
}

/**
 * The plan of a seed: about 91% valid messages, 2% malformed JSON, 1% without a key, 4% reusing
 * an earlier key with another payload, 1% keyed by a number beyond 2^53 (written as its digits
 * in the body), 1% keyed by a string with a lone surrogate (ill-formed UTF-16). About 40% of
 * messages get a copy placed in the next batch (delivered concurrently), 4% a copy resent long
 * after, 2% a copy in the same batch, and 5% of valid messages an expiry redelivery; failures
 * and crashes add redeliveries. 1% of valid messages meet a downstream outage (every copy ends
 * in the dead-letter queue half-completed, and is redriven with a new message id), 2% are
 * redriven once more after they completed, and in two-phase seeds 0.5% have their record
 * expire while their effect runs.
 */
export function planMessages(
  seed: number,
  count: number,
  consumer: string,
  mode: Mode,
  keySource: KeySourceStyle = 'body',
  queue: QueueType = 'standard',
): PlannedMessage[] {
  const fifo = queue === 'fifo';
  const random = createRandom(seed);
  const plans: PlannedMessage[] = [];
  const partnerable: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const roll = random.next();
    const amount = random.between(1, 1_000_000);
    let kind: MessageKind =
      roll < 0.02
        ? 'malformed'
        : roll < 0.03
          ? 'missing-key'
          : roll < 0.07
            ? 'conflict'
            : roll < 0.08
              ? 'big-key'
              : roll < 0.09
                ? 'ill-formed-key'
                : 'valid';
    // Keys differing only in their lone surrogate, a few of them outright equal.
    const key =
      kind === 'ill-formed-key'
        ? `u${index % 16}${String.fromCharCode(0xd800 + random.int(0x800))}`
        : `k${index}`;
    const bigKey = kind === 'big-key' ? (BIG_KEY_BASE + BigInt(index)).toString() : undefined;
    let partner: PlannedMessage | undefined;
    if (kind === 'conflict') {
      const pick =
        partnerable.length > 0 ? partnerable.splice(random.int(partnerable.length), 1)[0] : undefined;
      partner = pick === undefined ? undefined : plans[pick];
      if (partner === undefined) kind = 'valid';
    }
    const messageKey = partner?.key ?? key;
    const payload = { id: messageKey, amount, note: `order ${index} of seed ${seed}` };
    const expiry = kind === 'valid' && random.chance(0.05);
    const outage = kind === 'valid' && !expiry && random.chance(0.01);
    const expiryMidEffect =
      mode === 'two-phase' && kind === 'valid' && !expiry && !outage && random.chance(0.005);
    // A completed message reaches the dead-letter queue only by the queue's redrive policy, which
    // attaches nothing: a consumer keyed by the deduplication id could not recognise it.
    const redriveCompleted =
      kind === 'valid' && !expiry && !outage && random.chance(0.02) && keySource === 'body';
    const copies: PlannedCopy[] = [];
    const copy = (position: number, delayMillis: number, epoch: 0 | 1 = 0): void => {
      const body =
        kind === 'malformed'
          ? `{"id":"${key}","amount":${amount},"note":"truncated`
          : kind === 'missing-key'
            ? serialise({ amount, note: payload.note }, random)
            : kind === 'big-key'
              ? serialise({ ...payload, id: BIG_KEY_PLACEHOLDER }, random).replace(
                  `"${BIG_KEY_PLACEHOLDER}"`,
                  bigKey!,
                )
              : serialise(payload, random);
      const deduplicationId =
        kind === 'malformed' || kind === 'missing-key' ? undefined : (bigKey ?? messageKey);
      copies.push({
        messageId: `s${seed}-m${index}-c${copies.length}`,
        position,
        delayMillis,
        epoch,
        body,
        ...(deduplicationId === undefined ? {} : { deduplicationId }),
      });
    };
    copy(index, 0);
    const extra = random.next();
    if (extra < 0.4) copy(index + random.between(BATCH_SIZE, 2 * BATCH_SIZE - 1) + 0.5, 0);
    // Resends come in waves (a producer's retry schedule), so they also meet concurrently.
    // On a FIFO queue the waves are four times as long (1 to 8 minutes), so some resends fall
    // within the 5-minute deduplication interval (SQS drops them) and some after it (delivered
    // as new messages: the consumer's dedup must catch them).
    else if (extra < 0.44) copy(index + 0.5, random.between(1, 8) * 15_000 * (fifo ? 4 : 1));
    else if (extra < 0.46) copy(index + random.between(1, 5) + 0.25, 0);
    // A FIFO queue would drop an expiry redelivery sent within the deduplication interval.
    if (expiry)
      copy(
        index + 0.75,
        random.between(1, 3) * VISIBILITY_TIMEOUT_MILLIS + (fifo ? FIFO_DEDUPLICATION_WINDOW_MILLIS : 0),
        1,
      );
    // Redriven copies keep the body (and attributes) and get a new message id, as AWS does.
    const redriven = outage ? [...copies] : redriveCompleted ? [copies[0]!] : [];
    for (const source of redriven) {
      const messageId = `${source.messageId}-redriven`;
      copies.push({
        ...source,
        messageId,
        position: count + index,
        redriveOf: source.messageId,
        deduplicationId: messageId,
      });
    }

    const keyed =
      kind !== 'malformed' && kind !== 'missing-key' && kind !== 'big-key' && kind !== 'ill-formed-key';
    const plan: PlannedMessage = {
      index,
      keyIndex: partner?.index ?? index,
      kind,
      ...(keyed ? { key: messageKey, scopedKey: scopeKey(consumer, messageKey), amount } : {}),
      ...(bigKey === undefined ? {} : { key: bigKey, bigKey, amount }),
      ...(fifo ? { group: fifoGroupOf(index, count) } : {}),
      ...(keyed
        ? {
            effectKeys:
              mode === 'two-phase'
                ? TWO_PHASE_EFFECTS.map((effect) => scopeKey(consumer, messageKey, effect))
                : [scopeKey(consumer, messageKey)],
          }
        : {}),
      ...(keyed ? { fingerprint: fingerprintOf(payload) } : {}),
      expiry,
      outage,
      expiryMidEffect,
      ...(kind === 'malformed'
        ? { expectedCode: 'MALFORMED_BODY' as const }
        : kind === 'missing-key'
          ? { expectedCode: 'MISSING_KEY' as const }
          : kind === 'ill-formed-key'
            ? { expectedCode: 'INVALID_KEY' as const }
            : keyed
              ? { expectedCode: 'PAYLOAD_MISMATCH' as const }
              : {}),
      copies,
    };
    plans.push(plan);
    if (kind === 'valid' && !expiry && !outage && !expiryMidEffect) partnerable.push(index);
  }
  return plans;
}

/** Stands for a big key's digits while its body is serialised. */
const BIG_KEY_PLACEHOLDER = 'big-key-digits';

/** Faults of one delivered record. */
type RecordFault =
  | 'throttle'
  | 'throttle-after-applied'
  | 'conflict'
  | 'lost-response'
  | 'crash-before-claim'
  | 'crash-after-claim'
  | 'crash-after-outcome'
  | 'crash-during-effect'
  | 'lost-downstream-response'
  | 'lost-response-retried'
  | 'late-duplicate'
  | 'effect-fails'
  | 'delayed-heartbeat';

const RECORD_FAULTS: readonly (readonly [RecordFault, number])[] = [
  ['throttle', 0.04],
  ['conflict', 0.03],
  ['lost-response', 0.02],
  // The claim (or commit) is applied, its response lost, and the SDK sends it again at once.
  ['lost-response-retried', 0.02],
  // The claim is answered, and a first attempt of it lands again after the next step on its record.
  ['late-duplicate', 0.01],
  ['crash-before-claim', 0.005],
  ['crash-after-claim', 0.005],
  ['crash-after-outcome', 0.005],
  ['crash-during-effect', 0.005],
  ['lost-downstream-response', 0.02],
  // Marker and two-phase: the effect fails before it happens, so the claim is released.
  ['effect-fails', 0.02],
  // Two-phase: the effect outlasts a heartbeat, which is held on the network until the effect
  // has failed (the claim released) or completed.
  ['delayed-heartbeat', 0.004],
  // The claim (or commit) is applied, then answered with a throttling error.
  ['throttle-after-applied', 0.01],
];

/** A fault of an inbox record update. */
type UpdateFault = 'lost-response-retried' | 'late-duplicate' | 'throttle' | 'throttle-after-applied';

/**
 * Faults of an inbox record update (release, complete, heartbeat), drawn per update: the
 * response lost after DynamoDB applied it and the SDK's retry sent at once, or a first attempt
 * landing again after the next step on the record (a release retried late is how another
 * delivery's completed marker could be undone); a throttling error before the update is applied,
 * or after it was.
 */
const UPDATE_FAULTS: Readonly<Record<InboxUpdate, readonly (readonly [UpdateFault, number])[]>> = {
  release: [
    ['lost-response-retried', 0.25],
    ['late-duplicate', 0.25],
    ['throttle', 0.02],
    ['throttle-after-applied', 0.02],
  ],
  complete: [
    ['lost-response-retried', 0.03],
    ['late-duplicate', 0.03],
    ['throttle', 0.01],
    ['throttle-after-applied', 0.01],
  ],
  extend: [
    ['lost-response-retried', 0.3],
    ['throttle', 0.02],
    ['throttle-after-applied', 0.02],
  ],
  replace: [],
};

/**
 * The chance that a commit (`TransactWriteItems`) of a delivery meets a transaction conflict
 * when another running invocation has a delivery of one of its keys: DynamoDB refuses a
 * transaction touching an item another request is writing (`TransactionConflict`).
 */
const RACING_CONFLICT_CHANCE = 0.1;

/** The chance that a read (a fallback `GetItem`) of an invocation with faults is throttled. */
const READ_THROTTLE_CHANCE = 0.2;

/** What a request does in the toolkit's protocol, as the report counts throttled requests. */
export type RequestKind = 'claim' | 'commit' | 'complete' | 'release' | 'heartbeat' | 'read' | 'other';

/** The kind of `request` (a shared commit counts once). */
export function requestKindOf(request: DynamoRequest): RequestKind {
  if (request.operation === 'GetItem') return 'read';
  const role = rolesOf(request)[0];
  if (role?.role === 'claim') return request.operation === 'TransactWriteItems' ? 'commit' : 'claim';
  if (role?.role !== 'effect' || role.update === undefined || role.update === 'replace') return 'other';
  return role.update === 'extend' ? 'heartbeat' : role.update;
}

/**
 * The throttling errors injected, by code, and how many of them answered a request DynamoDB had
 * applied (`after applied`).
 */
export type ThrottleCounts = Record<ThrottleCode | 'after applied', number>;

/** Crash points, as counted in the report. */
export const CRASH_POINTS = [
  'before the claim',
  'after the claim',
  'after the outcome, before the acknowledgement',
  'during the effect',
  'while building the batch response',
] as const;

/** A crash point. */
export type CrashPoint = (typeof CRASH_POINTS)[number];

function recordFaultOf(
  seed: number,
  mode: Mode,
  received: ReceivedMessage<PlannedCopyMeta>,
): RecordFault | undefined {
  const fault = drawFault(RECORD_FAULTS, chanceOf(seed, 'record', received.messageId, received.receiveCount));
  // Each mode meets only the faults of the steps it has.
  if (fault === 'crash-during-effect' || fault === 'effect-fails')
    return mode === 'marker' || mode === 'two-phase' ? fault : undefined;
  if (fault === 'lost-downstream-response' || fault === 'delayed-heartbeat')
    return mode === 'two-phase' ? fault : undefined;
  return fault;
}

/** What the queue carries next to each copy. */
export interface PlannedCopyMeta {
  readonly plan: PlannedMessage;
  readonly epoch: 0 | 1;
  readonly deduplicationId?: string;
  /** Message attributes (a redriven dead letter's, as the direct dead-letter sender set them). */
  readonly attributes?: Readonly<Record<string, SqsMessageAttribute>>;
}

/** One delivery of one copy, timed in real time to find concurrent deliveries. */
export interface Delivery {
  readonly planIndex: number;
  readonly messageId: string;
  readonly invocation: number;
  readonly startedAt: number;
  endedAt: number;
}

/** The last outcome logged for a message by an invocation that did not crash. */
export interface LoggedOutcome {
  readonly outcome: string;
  readonly code?: string;
  readonly reason?: string;
}

/** Everything a seed observed, for the oracle. */
export interface SimulationResult {
  readonly options: SeedOptions;
  readonly plans: readonly PlannedMessage[];
  readonly queue: SimulatedQueue<PlannedCopyMeta>;
  readonly directDeadLetters: readonly DeadLetterMessage[];
  readonly lastOutcome: ReadonlyMap<string, LoggedOutcome>;
  readonly deliveries: readonly Delivery[];
  /** Successful effect writes seen on the wire, by key (a commit, an entity put, a marker-mode update). */
  readonly effectWrites: ReadonlyMap<string, number>;
  /**
   * Marker mode: keys whose marker was written (DynamoDB answered 200) by an invocation that
   * neither wrote the effect nor released that marker (told by its owner token; see
   * `unfollowedMarkers`): a crash in between, or a lost response to the marker write (the
   * retry then finds its own marker and acknowledges a duplicate), or a late copy of a
   * concurrent delivery's marker put landing after another delivery's release (`late claim`;
   * a late copy of a delivery's own put never re-takes the marker it released).
   */
  readonly markerGaps: ReadonlyMap<string, MarkerGap>;
  /** Two-phase: the downstream service the effects call, and what the inbox did around it. */
  readonly downstream: DownstreamLog;
  readonly crashes: Readonly<Record<CrashPoint, number>>;
  /**
   * With `RELIABILITY_TRACE=1`: what happened to each inbox record key (requests and their
   * status, effects, crashes), to explain a violation.
   */
  readonly trace: ReadonlyMap<string, readonly string[]> | undefined;
  readonly invocations: number;
  /**
   * The IAM actions the requests sent need, by table (`dynamodb:PutItem`, ...; a transaction
   * needs each of its items' actions on that item's table), to compare with the construct's grants.
   */
  readonly actions: ReadonlyMap<string, ReadonlySet<string>>;
  /** Things the runtime saw that must never happen (a handler that threw, a bad batch response). */
  readonly runtimeViolations: readonly string[];
  readonly virtualMillis: number;
  /** Big-key plans: the dedup keys the toolkit gave each one's deliveries (by plan index). */
  readonly keyedAs: ReadonlyMap<number, ReadonlySet<string>>;
  /** How often each fault class beyond crashes was injected. */
  readonly injected: Readonly<Record<InjectedFault, number>>;
  /**
   * Expiries mid-effect whose rival took the claim over because the lease had ended by its clock
   * (the real time from the owner's last heartbeat to the rival's claim, plus the skew between
   * them, outlasted the rest of the lease): takeovers, not a held lease lost. By record key.
   */
  readonly rivalsAfterLeaseEnded: readonly string[];
  /** Duplicates the instances' completed-record caches acknowledged without a request. */
  readonly cacheHits: number;
  /** Instances started again cold (their cache empty) after an invocation crashed. */
  readonly coldRestarts: number;
  /** The throttling errors injected (counted in `injected.throttles`), by code. */
  readonly throttles: Readonly<ThrottleCounts>;
  /** Transaction conflicts injected on a commit racing a concurrent delivery of its key. */
  readonly racingConflicts: number;
  /** The throttling errors injected, by the kind of request they answered. */
  readonly throttledRequests: Readonly<Partial<Record<RequestKind, number>>>;
  /**
   * What happened, in order (`history.ts`): every message's input, keys made at run time and
   * deliveries, the effects DynamoDB (or, in two-phase mode, the downstream service) applied in
   * commit order with their live window, dead letters with their reason (the redrive policy's,
   * with the last logged outcome's, once the run ended) and marker-mode gaps.
   */
  readonly history: readonly HistoryEntry[];
  /** FIFO seeds: what the queue deduplicated and how the groups went. */
  readonly fifo?: FifoCounts;
}

/** What a FIFO seed's queue did beyond a standard queue's. */
export interface FifoCounts {
  /** Message groups. */
  readonly groups: number;
  /** Producer copies the queue accepted and never delivered (sent again within 5 minutes). */
  readonly deduplicated: number;
  /** Producer copies sent again after the 5-minute interval, delivered as new messages. */
  readonly resentAfterWindow: number;
  /** Messages the engine reported failed because an earlier one of their group failed in the batch. */
  readonly groupBlocked: number;
}

/** Fault classes counted in the summary, next to the crashes. */
export const INJECTED_FAULTS = [
  'lost responses',
  'delayed heartbeats',
  'expiries mid-effect',
  'skewed clocks',
  'redrives',
  'odd keys',
  'throttles',
  'transaction conflicts',
  'invocations timed out',
  'invocations shared a process',
] as const;

/** A counted fault class. */
export type InjectedFault = (typeof INJECTED_FAULTS)[number];

/** Why a marker-mode key has a marker without its effect (at-most-once by design). */
export type MarkerGap = 'crash' | 'lost response' | 'late claim' | 'timeout';

/** Events per inbox record key, each tagged with the epoch it happened in. */
export type EpochEvents = ReadonlyMap<string, readonly number[]>;

/**
 * The simulated downstream service of two-phase seeds (a payments API, a mailer): idempotent by
 * the `idempotencyKey` the toolkit derives, like any well-behaved external API.
 */
export interface DownstreamLog {
  /** Every execution of an effect, by effect record key: what the toolkit made happen. */
  readonly executions: EpochEvents;
  /** Applied effects by idempotency key (the first execution): what the outside world sees. */
  readonly applied: ReadonlyMap<
    string,
    { readonly pk: string; readonly amount: number; readonly count: number }
  >;
  /** Claims taken over (DynamoDB answered 200 to a takeover), by effect record key. */
  readonly takeovers: EpochEvents;
  /** Effects that executed downstream but whose answer was lost, so the claim was released. */
  readonly failedAfterExecution: EpochEvents;
}

interface Instance {
  readonly index: number;
  readonly skewMillis: number;
  readonly client: LocalClient;
  handler: SqsHandler;
  /**
   * Invocations the instance runs at the same time on its one handler (a Lambda Managed Instance
   * runs many per Node process): 1 for most instances, more for `SHARED_PROCESS_SLOTS`.
   */
  readonly slots: number;
  /** Its invocations running now. */
  readonly running: Set<Invocation>;
}

/**
 * Slots of the first instances of every seed: these run two or three invocations at once in one
 * process, on one handler object, as Lambda Managed Instances do.
 */
const SHARED_PROCESS_SLOTS: readonly number[] = [3, 2];

interface Invocation {
  readonly id: number;
  readonly instance: Instance;
  readonly epoch: 0 | 1;
  readonly startVirtual: number;
  readonly startReal: number;
  readonly faultsByKey: Map<string, (RecordFault | undefined)[]>;
  readonly claims: Map<string, number>;
  readonly outcomeCrash: Set<string>;
  readonly receiveCounts: Map<string, number>;
  readonly responseCrash: boolean;
  readonly deadline: boolean;
  readonly faults: boolean;
  /** Marker mode: the owner tokens of the markers the invocation wrote (answered 200), by key. */
  readonly markerWritten: Map<string, Set<string>>;
  readonly effectWritten: Set<string>;
  /** Marker mode: the owner tokens of the markers the invocation released, by key. */
  readonly markerReleased: Map<string, Set<string>>;
  /** The delivery each record key of the batch belongs to, to draw its update faults. */
  readonly deliveryByKey: Map<string, { readonly messageId: string; readonly receiveCount: number }>;
  /** Inbox updates sent so far, by record key and kind, to draw each one's faults. */
  readonly updates: Map<string, number>;
  /**
   * Events of the invocation's own requests (`extend-sent:<pk>`, `extend-landed:<pk>`,
   * `ended:<pk>` for a release or complete answered), each resolved once it happened.
   */
  readonly events: Map<string, ReturnType<typeof deferred>>;
  readonly batch: readonly ReceivedMessage<PlannedCopyMeta>[];
  /**
   * Killed at its timeout as it is about to send this request (1 for its first): that one is
   * never sent, those sent before it still land, answered to nobody; none when undefined.
   */
  readonly timeoutAt: number | undefined;
  /** Requests the invocation has sent so far. */
  sent: number;
  /** Resolved when the invocation is killed (its timeout, or its process dying under it). */
  readonly killed: ReturnType<typeof deferred>;
  /** Record keys the invocation claimed (any claim sent): its heartbeats may extend only these. */
  readonly claimed: Set<string>;
  /** It ran while another invocation ran on the same handler, in the same process. */
  shared: boolean;
  /** The clock jump of an expiry mid-effect (0 before it). */
  jumpMillis: number;
  /** Expiry mid-effect: the owner's clock right after the jump (undefined before it). */
  jumpedClock: number | undefined;
  crashed: boolean;
}

/** A promise and the function that resolves it. */
function deferred(): { readonly promise: Promise<void>; readonly resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((done) => {
    resolve = done;
  });
  return { promise, resolve };
}

const invocationContext = new AsyncLocalStorage<Invocation>();

/** The deferred of an invocation's event, created on first use. */
function eventOf(invocation: Invocation, name: string): ReturnType<typeof deferred> {
  let event = invocation.events.get(name);
  if (event === undefined) {
    event = deferred();
    invocation.events.set(name, event);
    if (invocation.crashed) event.resolve();
  }
  return event;
}

/**
 * How long (real time) an effect waits for its heartbeat: the heartbeat beats every lease/3,
 * so a lease is plenty. Only a guard: a heartbeat that never comes is reported.
 */
const HEARTBEAT_WAIT_MILLIS = LEASE_MILLIS;

/**
 * How long (real time) a delayed heartbeat stays on the network after its effect ended when the
 * toolkit waits for it before releasing or completing (else it lands after that write).
 */
const HELD_PAST_EFFECT_MILLIS = 200;

/** True when `promise` settles within `millis` (real time), false when it does not. */
export async function settlesWithin(promise: Promise<unknown>, millis: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), millis);
  });
  try {
    return await Promise.race([promise.then(() => true), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Runs one seed to the end (every message deleted or dead-lettered) and returns what it saw. */
export async function runSimulation(options: SeedOptions): Promise<SimulationResult> {
  const { seed, mode, inboxTable, businessTable } = options;
  const fifo = options.queue === 'fifo';
  const consumer = consumerOf(seed, mode, options.queue);
  const planned = planMessages(seed, options.messages, consumer, mode, options.keySource, options.queue);
  // What the consumer is sent: a FIFO queue drops the copies it deduplicates.
  const plans = fifo ? fifoAccepted(planned) : planned;
  const planByMessageId = new Map(
    plans.flatMap((plan) => plan.copies.map((copy) => [copy.messageId, plan] as const)),
  );
  const history = createHistory();
  for (const plan of plans) {
    const keys =
      mode === 'two-phase' ? (plan.effectKeys ?? []) : plan.scopedKey === undefined ? [] : [plan.scopedKey];
    history.append({
      kind: 'input',
      message: `m${plan.index}`,
      keys,
      ...(plan.amount === undefined ? {} : { amount: plan.amount }),
    });
  }
  /** 1 until the queue first drained; 2 while the dead-letter redrive runs (the outage is over). */
  let phase: 1 | 2 = 1;
  const keyedAs = new Map<number, Set<string>>();
  const injected = Object.fromEntries(INJECTED_FAULTS.map((fault) => [fault, 0])) as Record<
    InjectedFault,
    number
  >;
  injected['odd keys'] = plans.filter(
    (plan) => plan.kind === 'big-key' || plan.kind === 'ill-formed-key',
  ).length;
  const throttles = {
    ...Object.fromEntries(THROTTLE_CODES.map((code) => [code, 0])),
    'after applied': 0,
  } as ThrottleCounts;
  let racingConflicts = 0;
  const throttledRequests: Partial<Record<RequestKind, number>> = {};
  /** The record keys of every running invocation's batch, by key: who races whom. */
  const liveKeys = new Map<string, Set<number>>();
  /** Handlers of invocations killed at their timeout, still running with nobody waiting. */
  const abandoned: Promise<unknown>[] = [];
  /** Owners whose release or complete DynamoDB answered 200, by record key. */
  const endedOwners = new Map<string, Set<string>>();
  /** Late copies of requests waiting for the next step on their record, by record key. */
  const lateByKey = new Map<string, { readonly claim: boolean; readonly send: () => Promise<number> }[]>();
  const lateInFlight: Promise<unknown>[] = [];
  const sendLate = (pk: string): void => {
    const late = lateByKey.get(pk);
    if (late === undefined) return;
    lateByKey.delete(pk);
    for (const { claim, send } of late) {
      const landed = send().then((status) => {
        note(pk, undefined, `late duplicate${claim ? ' of a claim' : ''} landed -> ${status}`);
        // A late copy of a claim never re-takes the claim it released itself (the store's
        // condition excludes the claim's own owner). One that lands after *another* delivery's
        // release (its own put was answered as a duplicate while that delivery ran) writes the
        // marker again without the effect: the documented at-most-once gap of a concurrent
        // duplicate in marker mode (README, "Marker mode is at-most-once for the effect").
        if (status === 200 && claim && mode === 'marker') markerGaps.set(pk, 'late claim');
      });
      lateInFlight.push(landed);
    }
  };
  const midEffectExpired = new Set<number>();
  /**
   * Expiries mid-effect: the lease (and `expiresAt`) the owner's last extension after its clock
   * jump wrote, by record key, and each rival invocation's claim (a takeover or not, and the
   * rival's clock), by invocation id.
   */
  const heldLeases = new Map<string, { readonly leaseExpiresAt: number; readonly expiresAt: number }>();
  const rivalClaims = new Map<
    number,
    { readonly takeover: boolean; readonly nowMillis: number } | undefined
  >();
  /** Record keys whose rival took the claim over after the lease had ended by its clock (see `expireMidEffect`). */
  const rivalsAfterLeaseEnded: string[] = [];
  const random = createRandom(seed ^ 0x5eed);
  // Time only moves forward: once a key's expiry redelivery was received, every later delivery
  // of that key happens a TTL later too (in epoch 1), never back in epoch 0.
  const keysInEpochOne = new Set<number>();
  const epochOf = (meta: PlannedCopyMeta): 0 | 1 =>
    meta.epoch === 1 || keysInEpochOne.has(meta.plan.keyIndex) ? 1 : 0;
  const created = createSimulatedQueue<PlannedCopyMeta>({
    startMillis: options.startMillis,
    visibilityTimeoutMillis: VISIBILITY_TIMEOUT_MILLIS,
    maxReceiveCount: MAX_RECEIVE_COUNT,
    random,
    skipChance: 0.05,
    alone: (meta) => epochOf(meta) === 1 || meta.plan.expiryMidEffect,
    ...(fifo
      ? {
          fifo: {
            groupOf: (message) => message.meta.plan.group!,
            deduplicationIdOf: (message) =>
              fifoDeduplicationIdOf({ deduplicationId: message.meta.deduplicationId, body: message.body }),
          },
        }
      : {}),
  });
  const queue = options.wrapQueue?.(created) ?? created;
  let groupBlocked = 0;
  const metaOf = (
    plan: PlannedMessage,
    copy: PlannedCopy,
    attributes?: Readonly<Record<string, SqsMessageAttribute>>,
  ): PlannedCopyMeta => ({
    plan,
    epoch: copy.epoch,
    ...(copy.deduplicationId === undefined ? {} : { deduplicationId: copy.deduplicationId }),
    ...(attributes === undefined ? {} : { attributes }),
  });
  // A FIFO queue is sent every copy the producer sends, and deduplicates them itself.
  const sends = planned
    .flatMap((plan) => plan.copies.map((copy) => ({ plan, copy })))
    .filter(({ copy }) => copy.redriveOf === undefined)
    .sort((a, b) => a.copy.position - b.copy.position);
  const sentPlans = new Map(plans.map((plan) => [plan.index, plan]));
  for (const { plan, copy } of sends) {
    // A copy the queue deduplicates is never delivered: its meta names the plan as planned.
    const meta = metaOf(sentPlans.get(plan.index) ?? plan, copy);
    queue.send({ messageId: copy.messageId, body: copy.body, meta }, copy.delayMillis);
  }

  const directDeadLetters: DeadLetterMessage[] = [];
  const lastOutcome = new Map<string, LoggedOutcome>();
  const deliveries: Delivery[] = [];
  const effectWrites = new Map<string, number>();
  const actions = new Map<string, Set<string>>();
  const markerGaps = new Map<string, MarkerGap>();
  const crashes = Object.fromEntries(CRASH_POINTS.map((point) => [point, 0])) as Record<CrashPoint, number>;
  let cacheHits = 0;
  let coldRestarts = 0;
  const runtimeViolations: string[] = [];
  const executions = new Map<string, number[]>();
  const applied = new Map<string, { pk: string; amount: number; count: number }>();
  const takeovers = new Map<string, number[]>();
  const failedAfterExecution = new Map<string, number[]>();
  const tag = (map: Map<string, number[]>, key: string, epoch: number) => {
    const list = map.get(key) ?? [];
    list.push(epoch);
    map.set(key, list);
  };

  const current = (instance: Instance): Invocation | undefined => {
    const invocation = invocationContext.getStore();
    return invocation?.instance === instance ? invocation : undefined;
  };
  /**
   * FIFO: the group, sequence number and message of the record in `invocation`'s batch that
   * applied the effect on `pk` with `amount`, for the history checker's `orderPerGroup`: the first
   * record of the batch with that key and payload (the engine runs a batch's records of one key in
   * batch order, and a group's in group order). Nothing on a standard queue, or for a request no
   * invocation sent.
   */
  const orderOf = (
    invocation: Invocation | undefined,
    pk: string,
    amount: number,
  ): { group?: string; sequence?: string; message?: string } => {
    if (!fifo || invocation === undefined) return {};
    const received = invocation.batch.find(({ meta: { plan } }) => {
      const keys =
        plan.effectKeys ??
        [...(keyedAs.get(plan.index) ?? [])].flatMap((key) =>
          mode === 'two-phase'
            ? TWO_PHASE_EFFECTS.map((effect) => scopeKey(consumer, key, effect))
            : [scopeKey(consumer, key)],
        );
      return keys.includes(pk) && (plan.amount === undefined || plan.amount === amount);
    });
    if (received?.groupId === undefined || received.sequenceNumber === undefined) return {};
    return {
      group: received.groupId,
      sequence: received.sequenceNumber,
      message: `m${received.meta.plan.index}`,
    };
  };
  const trace = process.env.RELIABILITY_TRACE ? new Map<string, string[]>() : undefined;
  const note = (pk: string, invocation: Invocation | undefined, text: string): void => {
    if (trace === undefined) return;
    const list = trace.get(pk) ?? [];
    const who = invocation
      ? `i${invocation.id} e${invocation.epoch} skew ${invocation.instance.skewMillis}`
      : 'outside';
    list.push(`${Math.round(performance.now())} ${who}: ${text}`);
    trace.set(pk, list);
  };
  /**
   * The process of `invocation` dies: it, and every other invocation running in that process on
   * the same handler, are dead from now on.
   */
  const die = (invocation: Invocation, why: string): void => {
    for (const victim of new Set([invocation, ...invocation.instance.running])) {
      if (victim.crashed) continue;
      victim.crashed = true;
      // Nothing of a dead invocation comes any more: whatever waited for its requests stops waiting.
      for (const event of victim.events.values()) event.resolve();
      // The records with injected faults, and the markers written (a big key's has no planned key).
      const touched = new Set([...victim.faultsByKey.keys(), ...victim.markerWritten.keys()]);
      const how = victim === invocation ? why : `died with invocation ${invocation.id}, ${why}`;
      for (const pk of touched) note(pk, victim, `invocation ${how}`);
    }
  };
  const crash = (invocation: Invocation, point: CrashPoint): void => {
    if (invocation.crashed) return;
    crashes[point] += 1;
    die(invocation, `crashed ${point}`);
  };
  /**
   * Lambda kills `invocation` at its timeout: nothing answers for its batch, and its execution
   * environment starts again (see `invoke`). Requests it has in flight still land.
   */
  const timeOut = (invocation: Invocation): void => {
    if (invocation.crashed) return;
    injected['invocations timed out'] += 1;
    die(invocation, 'killed at its timeout');
    invocation.killed.resolve();
  };
  const bump = (map: Map<string, number>, key: string) => map.set(key, (map.get(key) ?? 0) + 1);

  /** The fault of an inbox update (release, complete, heartbeat) of the invocation's record `pk`. */
  const updateFault = (invocation: Invocation, pk: string, update: InboxUpdate): RequestFault | undefined => {
    const delivery = invocation.deliveryByKey.get(pk);
    if (delivery === undefined) return undefined;
    const nth = invocation.updates.get(`${update}:${pk}`) ?? 0;
    invocation.updates.set(`${update}:${pk}`, nth + 1);
    if (update === 'extend') {
      eventOf(invocation, `extend-sent:${pk}`).resolve();
      const claim = (invocation.claims.get(pk) ?? 1) - 1;
      if (nth === 0 && invocation.faultsByKey.get(pk)?.[claim] === 'delayed-heartbeat') {
        // Held on the network past the effect's end: until its release or complete was answered,
        // or, when the toolkit waits for its heartbeats first, a moment after the effect ended.
        const afterEffect = eventOf(invocation, `effect-ended:${pk}`).promise.then(
          () => new Promise<void>((resolve) => setTimeout(resolve, HELD_PAST_EFFECT_MILLIS)),
        );
        return {
          kind: 'hold',
          until: Promise.race([eventOf(invocation, `ended:${pk}`).promise, afterEffect]),
        };
      }
    }
    const roll = chanceOf(seed, 'update', update, delivery.messageId, delivery.receiveCount, nth);
    const kind = drawFault(UPDATE_FAULTS[update], roll);
    if (kind === 'throttle' || kind === 'throttle-after-applied')
      return { kind: 'throttle', applied: kind === 'throttle-after-applied' };
    if (kind !== undefined) injected['lost responses'] += 1;
    return kind === undefined ? undefined : { kind };
  };

  /**
   * A transaction conflict for a commit of `invocation` while another running invocation has a
   * delivery of one of its markers' keys (drawn per key and delivery), on that marker's item.
   */
  const racingConflict = (invocation: Invocation, request: DynamoRequest): RequestFault | undefined => {
    if (request.operation !== 'TransactWriteItems') return undefined;
    const items = (request.input.TransactItems ?? []) as { Put?: { TableName?: string; Item?: unknown } }[];
    for (const [item, action] of items.entries()) {
      const pk = action.Put?.TableName === inboxTable ? pkOf(action.Put.Item) : undefined;
      const delivery = pk === undefined ? undefined : invocation.deliveryByKey.get(pk);
      if (pk === undefined || delivery === undefined) continue;
      const rivals = [...(liveKeys.get(pk) ?? [])].filter((id) => id !== invocation.id);
      if (rivals.length === 0) continue;
      const roll = chanceOf(seed, 'racing conflict', pk, delivery.messageId, delivery.receiveCount);
      if (roll >= RACING_CONFLICT_CHANCE) continue;
      racingConflicts += 1;
      note(pk, invocation, `commit conflicts with invocation(s) ${rivals.join(', ')} (injected)`);
      return { kind: 'conflict', item };
    }
    return undefined;
  };

  /** Counts the throttle or conflict `fault` of `request`; a throttle gets its error code here. */
  const counted = (
    invocation: Invocation,
    request: DynamoRequest,
    fault: RequestFault | undefined,
  ): RequestFault | undefined => {
    if (fault?.kind === 'conflict') injected['transaction conflicts'] += 1;
    if (fault?.kind !== 'throttle') return fault;
    const first = invocation.batch[0]!;
    const role = rolesOf(request)[0]!;
    const roll = chanceOf(
      seed,
      'throttle code',
      request.operation,
      role.role === 'other' ? '' : role.pk,
      first.messageId,
      first.receiveCount,
    );
    const code = THROTTLE_CODES[Math.floor(roll * THROTTLE_CODES.length)]!;
    injected.throttles += 1;
    throttles[code] += 1;
    if (fault.applied) throttles['after applied'] += 1;
    const kind = requestKindOf(request);
    throttledRequests[kind] = (throttledRequests[kind] ?? 0) + 1;
    return { ...fault, code };
  };

  /**
   * A read meets a throttle in one case of `READ_THROTTLE_CHANCE` (reads are only a fallback, when
   * a failed condition did not return the stored item).
   */
  const readFault = (invocation: Invocation, request: DynamoRequest): RequestFault | undefined => {
    if (request.operation !== 'GetItem') return undefined;
    const first = invocation.batch[0]!;
    const key = pkOf(request.input.Key) ?? '';
    const roll = chanceOf(seed, 'read', key, first.messageId, first.receiveCount);
    return roll < READ_THROTTLE_CHANCE ? { kind: 'throttle' } : undefined;
  };

  const controllerOf = (instance: Instance): FaultController => ({
    isCrashed: () => current(instance)?.crashed ?? false,
    decide(request: DynamoRequest): RequestFault | undefined {
      recordActions(actions, request);
      const invocation = current(instance);
      if (invocation === undefined) return undefined;
      invocation.sent += 1;
      // Killed now: this request is refused (the invocation is dead), those in flight land.
      if (invocation.sent === invocation.timeoutAt) timeOut(invocation);
      const roles = rolesOf(request);
      for (const role of roles) {
        if (role.role === 'claim') invocation.claimed.add(role.pk);
        // A lease timer belongs to the invocation that claimed: one extending another
        // invocation's claim leaked from it (handlers shared by concurrent invocations).
        if (role.role === 'effect' && role.update === 'extend' && !invocation.claimed.has(role.pk)) {
          runtimeViolations.push(
            `invocation ${invocation.id}: a heartbeat of ${role.pk}, which another invocation claimed`,
          );
        }
      }
      if (!invocation.faults) return undefined;
      // A transaction shared by several messages counts as a claim of each; the first planned
      // fault among them is the request's (a request meets one fault).
      let fault: RequestFault | undefined;
      for (const role of roles) {
        const planned = decideFor(invocation, role);
        if (fault !== undefined || planned === undefined) continue;
        fault = planned;
        if (role.role === 'claim' && losesClaimResponse(fault)) injected['lost responses'] += 1;
      }
      return counted(
        invocation,
        request,
        fault ?? racingConflict(invocation, request) ?? readFault(invocation, request),
      );
    },
    onLateDuplicate(request, send) {
      for (const role of rolesOf(request)) {
        if (role.role === 'other') continue;
        const late = lateByKey.get(role.pk) ?? [];
        late.push({ claim: role.role === 'claim', send });
        lateByKey.set(role.pk, late);
      }
    },
    crash(label) {
      const invocation = current(instance);
      if (invocation !== undefined) crash(invocation, label as CrashPoint);
    },
    onServerResponse(request, statusCode, repeated, sent) {
      const invocation = current(instance);
      for (const role of rolesOf(request)) onResponse(invocation, request, role, statusCode, repeated);
      if (statusCode !== 200 || repeated || mode === 'two-phase') return;
      for (const write of writesOn(request.operation, sent, businessTable)) {
        const epoch = write.values[':epoch'];
        const amount = Number(write.values.amount ?? write.values[':amount']);
        history.append({
          kind: 'applied',
          key: write.pk,
          amount,
          // The entity is its own marker and never expires: one live window.
          window: mode === 'entity' ? 0 : Array.isArray(epoch) ? Number(epoch[0]) : (invocation?.epoch ?? 0),
          ...orderOf(invocation, write.pk, amount),
        });
      }
    },
  });

  /** The fault `invocation` planned for its request on `role`'s key. */
  const decideFor = (invocation: Invocation, role: RequestRole): RequestFault | undefined => {
    if (role.role === 'other') return undefined;
    const faults = invocation.faultsByKey.get(role.pk);
    if (role.role === 'claim') {
      const claim = invocation.claims.get(role.pk) ?? 0;
      invocation.claims.set(role.pk, claim + 1);
      return claimRequestFault(faults?.[claim], { before: 'before the claim', after: 'after the claim' });
    }
    if (role.role === 'effect' && role.tableName === businessTable) {
      const claim = (invocation.claims.get(role.pk) ?? 1) - 1;
      if (faults?.[claim] === 'crash-during-effect')
        return { kind: 'crash-after', label: 'during the effect' };
    }
    if (role.role === 'effect' && role.update !== undefined)
      return updateFault(invocation, role.pk, role.update);
    return undefined;
  };

  /** What a response DynamoDB sent means for the key of `role`. */
  const onResponse = (
    invocation: Invocation | undefined,
    request: DynamoRequest,
    role: RequestRole,
    statusCode: number,
    repeated: boolean,
  ) => {
    if (role.role === 'effect' && role.update !== undefined) {
      const owner = (request.input.ExpressionAttributeValues as Record<string, unknown> | undefined)?.[
        ':owner'
      ];
      if (role.update === 'extend') {
        if (invocation !== undefined) eventOf(invocation, `extend-landed:${role.pk}`).resolve();
        const values = request.input.ExpressionAttributeValues as Record<string, unknown> | undefined;
        const leaseExpiresAt = Number(values?.[':leaseExpiresAt']);
        const jumpedClock = invocation?.jumpedClock;
        // An extension computed after the owner's clock jumped, applied: the lease it holds.
        if (statusCode === 200 && jumpedClock !== undefined && leaseExpiresAt > jumpedClock) {
          heldLeases.set(role.pk, { leaseExpiresAt, expiresAt: Number(values?.[':expiresAt']) });
          eventOf(invocation!, `extend-applied-after-jump:${role.pk}`).resolve();
        }
        if (statusCode === 200 && typeof owner === 'string' && endedOwners.get(role.pk)?.has(owner)) {
          runtimeViolations.push(
            `${role.pk}: a heartbeat landed after its claim was released or completed and revived it (issue 12 item 4)`,
          );
        }
      } else if (role.update === 'release' || role.update === 'complete') {
        if (invocation !== undefined) eventOf(invocation, `ended:${role.pk}`).resolve();
        if (statusCode === 200 && typeof owner === 'string') {
          const owners = endedOwners.get(role.pk) ?? new Set<string>();
          owners.add(owner);
          endedOwners.set(role.pk, owners);
        }
      }
    }
    // The next step on a record lets the late copies of earlier requests on it land.
    if (role.role !== 'other' && statusCode === 200 && !repeated) sendLate(role.pk);
    if (trace !== undefined && role.role !== 'other') {
      const values = (request.input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
      const item = (request.input.Item ?? {}) as Record<string, unknown>;
      note(
        role.pk,
        invocation,
        `${request.operation} ${role.role} -> ${statusCode}${repeated ? ' (repeated)' : ''} owner ${String(item.owner ?? values[':owner'] ?? '').slice(0, 8)} lease ${String(item.leaseExpiresAt ?? values[':leaseExpiresAt'] ?? '')} now ${String(values[':nowMillis'] ?? values[':nowSeconds'] ?? '')}`,
      );
    }
    if (statusCode !== 200 || repeated) return;
    if (role.role === 'claim' && mode === 'two-phase') {
      const values = (request.input.ExpressionAttributeValues ?? {}) as Record<string, unknown>;
      if (':owner' in values) tag(takeovers, role.pk, invocation?.epoch ?? 0);
      if (invocation !== undefined && rivalClaims.has(invocation.id)) {
        rivalClaims.set(invocation.id, {
          takeover: ':owner' in values,
          nowMillis: Number(values[':nowMillis'] ?? Number(values[':nowSeconds']) * 1000),
        });
      }
    } else if (role.role === 'claim') {
      const isEffect = mode === 'atomic' ? request.operation === 'TransactWriteItems' : mode === 'entity';
      if (isEffect) bump(effectWrites, role.pk);
      const owner = (request.input.Item as Record<string, unknown> | undefined)?.owner;
      if (mode === 'marker' && invocation !== undefined) addOwner(invocation.markerWritten, role.pk, owner);
    } else if (role.role === 'effect' && role.tableName === businessTable) {
      bump(effectWrites, role.pk);
      invocation?.effectWritten.add(role.pk);
    } else if (role.role === 'effect' && role.update === 'release') {
      // Marker mode's release of its marker (kept as a released claim, bound to its payload).
      const owner = (request.input.ExpressionAttributeValues as Record<string, unknown> | undefined)?.[
        ':owner'
      ];
      if (invocation !== undefined) addOwner(invocation.markerReleased, role.pk, owner);
    }
  };

  const loggerOf = (instance: Instance): Logger => ({
    log(entry: LogEntry) {
      const invocation = current(instance);
      const messageId = entry.messageId;
      // A log line stays with the invocation of its message, whatever else the process runs.
      if (typeof messageId === 'string' && !invocation?.receiveCounts.has(messageId)) {
        runtimeViolations.push(
          `${invocation === undefined ? 'outside any invocation' : `invocation ${invocation.id}`}: a log line of ${messageId}, a message it did not receive`,
        );
      }
      if (invocation === undefined || invocation.crashed) return;
      if (typeof messageId !== 'string' || typeof entry.outcome !== 'string') return;
      lastOutcome.set(messageId, {
        outcome: entry.outcome,
        ...(typeof entry.code === 'string' ? { code: entry.code } : {}),
        ...(typeof entry.reason === 'string' ? { reason: entry.reason } : {}),
      });
      if (entry.code === 'GROUP_BLOCKED') groupBlocked += 1;
      if (invocation.outcomeCrash.has(messageId)) {
        crash(invocation, 'after the outcome, before the acknowledgement');
        throw new SimulatedCrash('crashed after the outcome was decided');
      }
    },
  });

  const metricsOf = (instance: Instance): MetricsSink =>
    createCrashingMetrics({
      current: () => current(instance),
      crash: (invocation) => crash(invocation, 'while building the batch response'),
      onPublish: (counts) => {
        cacheHits += counts.cacheHit;
        checkCounts(current(instance), counts);
      },
    });

  /**
   * The counts an invocation publishes are its own: one outcome per message of its batch, and no
   * more cache hits than duplicates (another invocation's, in the same process, never mixed in).
   */
  const checkCounts = (invocation: Invocation | undefined, counts: OutcomeCounts): void => {
    if (invocation === undefined) {
      runtimeViolations.push('metrics published outside any invocation');
      return;
    }
    if (invocation.crashed) return;
    const { processed, duplicate, inFlight, mismatch, stale, retry, permanent, cacheHit } = counts;
    const outcomes = processed + duplicate + inFlight + mismatch + stale + retry + permanent;
    if (outcomes !== invocation.batch.length || cacheHit > duplicate) {
      runtimeViolations.push(
        `invocation ${invocation.id}: published ${outcomes} outcomes (${cacheHit} cache hits, ${duplicate} duplicates) for a batch of ${invocation.batch.length}`,
      );
    }
  };

  const senderOf = (instance: Instance): DeadLetterSender =>
    createCapturingDeadLetterSender({
      seed,
      labels: ['dead-letter'],
      current: () => current(instance),
      deliveryOf: (invocation, messageId) => invocation.receiveCounts.get(messageId) ?? 0,
      sent: {
        push(message) {
          const plan = planByMessageId.get(message.sourceMessageId);
          history.append({
            kind: 'dead-lettered',
            message: plan === undefined ? message.sourceMessageId : `m${plan.index}`,
            code: message.code,
            reason: message.reason,
          });
          return directDeadLetters.push(message);
        },
      },
    });

  const clockOf = (instance: Instance) => (): number => {
    const invocation = current(instance);
    if (invocation === undefined) return queue.now() + instance.skewMillis;
    const elapsed = performance.now() - invocation.startReal;
    return (
      Math.floor(invocation.startVirtual + elapsed) +
      instance.skewMillis +
      (invocation.epoch === 1 ? EXPIRY_JUMP_MILLIS : 0) +
      invocation.jumpMillis
    );
  };

  const effectUpdate = (scopedKey: string, amount: number, epoch: number) => ({
    TableName: businessTable,
    Key: { pk: scopedKey },
    UpdateExpression:
      'ADD #effects :one SET #amount = :amount, #epochs = list_append(if_not_exists(#epochs, :none), :epoch)',
    ExpressionAttributeNames: { '#effects': 'effects', '#amount': 'amount', '#epochs': 'epochs' },
    ExpressionAttributeValues: { ':one': 1, ':amount': amount, ':none': [], ':epoch': [epoch] },
  });

  /** The fault the running invocation injects into the record `pk`'s current claim, if any. */
  const faultOf = (invocation: Invocation | undefined, pk: string): RecordFault | undefined => {
    if (invocation === undefined || !invocation.faults) return undefined;
    const claim = (invocation.claims.get(pk) ?? 1) - 1;
    return invocation.faultsByKey.get(pk)?.[claim];
  };

  /** True while the downstream outage of `messageId`'s message lasts (until the redrive). */
  const inOutage = (messageId: string): boolean =>
    phase === 1 && planByMessageId.get(messageId)?.outage === true;
  /**
   * The failure an outage causes: permanent where the consumer dead-letters directly (the direct
   * sender then attaches the key to the dead letter), retried until the queue's redrive policy
   * moves the message otherwise.
   */
  const outageError = (what: string): Error =>
    options.deadLetter === 'direct'
      ? new PermanentError(`${what} (injected outage)`)
      : new Error(`${what} (injected outage)`);

  /** A call to the downstream service from inside a two-phase effect. */
  const callDownstream = async (
    instance: Instance,
    pk: string,
    idempotencyKey: string,
    amount: number,
    messageId: string,
  ): Promise<{ charged: number }> => {
    const invocation = current(instance);
    if (invocation?.crashed) throw new SimulatedCrash('downstream call refused: the invocation crashed');
    const plan = planByMessageId.get(messageId);
    const fault = faultOf(invocation, pk);
    if (inOutage(messageId) && pk === plan?.effectKeys?.at(-1)) {
      // The first effect completed; the second cannot: the message is half-completed.
      note(pk, invocation, 'downstream outage');
      throw outageError('The downstream service is down');
    }
    if (fault === 'effect-fails') {
      note(pk, invocation, 'effect failed before it happened');
      throw new Error('The downstream service refused the call (injected)');
    }
    if (invocation !== undefined && fault === 'delayed-heartbeat') {
      injected['delayed heartbeats'] += 1;
      // The effect outlasts a heartbeat, which the fault controller holds until the effect ended.
      const beat = await settlesWithin(
        eventOf(invocation, `extend-sent:${pk}`).promise,
        HEARTBEAT_WAIT_MILLIS,
      );
      // The effect ends now, whichever way, with its heartbeat still on the network.
      eventOf(invocation, `effect-ended:${pk}`).resolve();
      if (invocation.crashed) throw new SimulatedCrash('downstream call refused: the invocation crashed');
      if (!beat)
        runtimeViolations.push(`${pk}: no heartbeat within ${HEARTBEAT_WAIT_MILLIS} ms of a slow effect`);
      if (
        chanceOf(seed, 'slow effect fails', messageId, invocation.receiveCounts.get(messageId) ?? 0) < 0.5
      ) {
        note(pk, invocation, 'slow effect failed before it happened, a heartbeat in flight');
        throw new Error('The downstream service failed after a long wait (injected)');
      }
    }
    const epoch = invocation?.epoch ?? 0;
    tag(executions, pk, epoch);
    note(pk, invocation, `executed (clock ${clockOf(instance)()})`);
    const previous = applied.get(idempotencyKey);
    if (previous === undefined) {
      applied.set(idempotencyKey, { pk, amount, count: 1 });
      // What the outside world sees: the downstream service applies an idempotency key once.
      history.append({ kind: 'applied', key: pk, amount, window: epoch, ...orderOf(invocation, pk, amount) });
    } else previous.count += 1;
    if (
      invocation !== undefined &&
      plan?.expiryMidEffect === true &&
      pk === plan.effectKeys?.[0] &&
      invocation.epoch === 0 &&
      !midEffectExpired.has(plan.index)
    ) {
      midEffectExpired.add(plan.index);
      await expireMidEffect(instance, invocation, plan, pk, messageId);
      return { charged: amount };
    }
    if (invocation !== undefined && fault === 'crash-during-effect') {
      crash(invocation, 'during the effect');
      throw new SimulatedCrash('crashed during the external effect, after the downstream call');
    }
    if (fault === 'lost-downstream-response') {
      tag(failedAfterExecution, pk, epoch);
      note(pk, invocation, 'answer lost');
      throw new Error('The downstream service timed out after applying the effect (injected)');
    }
    return { charged: amount };
  };

  /**
   * The record `pk` expires while its effect runs: the effect answers only after more than a
   * TTL (the owner's clock jumps ahead), its heartbeat keeps the claim, and another delivery of
   * the message, that late too, must find the claim in flight, never claim the key afresh;
   * unless its clock at the claim is past the lease the heartbeat wrote (a starved machine, or
   * clocks beyond the skew tolerance): then it takes the claim over, a takeover like any other.
   */
  const expireMidEffect = async (
    instance: Instance,
    invocation: Invocation,
    plan: PlannedMessage,
    pk: string,
    messageId: string,
  ): Promise<void> => {
    injected['expiries mid-effect'] += 1;
    invocation.jumpMillis = EXPIRY_JUMP_MILLIS;
    invocation.jumpedClock = clockOf(instance)();
    // Time only moves forward: every later delivery of the key is that late too.
    keysInEpochOne.add(plan.keyIndex);
    note(pk, invocation, `the effect outlives the record's TTL: clock +${EXPIRY_JUMP_MILLIS} ms`);
    // A heartbeat that landed before the jump holds the lease of the old clock only (the record
    // has expired by the rival's clock): wait for one the owner computed after the jump.
    const beat = await settlesWithin(
      eventOf(invocation, `extend-applied-after-jump:${pk}`).promise,
      HEARTBEAT_WAIT_MILLIS,
    );
    if (invocation.crashed) return;
    if (!beat) {
      runtimeViolations.push(
        `${pk}: no heartbeat within ${HEARTBEAT_WAIT_MILLIS} ms of an effect outliving its TTL`,
      );
      return;
    }
    const received = invocation.batch.find((candidate) => candidate.messageId === messageId)!;
    const rivalId = `${messageId}-rival`;
    const rivalInstance = instances[(instance.index + 1) % instances.length]!;
    const rival = newInvocation(
      rivalInstance,
      [{ ...received, messageId: rivalId, receiptHandle: `rh-${rivalId}`, receiveCount: 1 }],
      1,
      false,
    );
    rivalClaims.set(rival.id, undefined);
    await invocationContext.run(rival, () =>
      rivalInstance
        .handler({ Records: recordsOf(rival.batch) }, lambdaContextOf(rival))
        .catch(() => undefined),
    );
    const outcome = lastOutcome.get(rivalId)?.outcome;
    if (outcome === 'in-flight') return;
    const held = heldLeases.get(pk)!;
    const claim = rivalClaims.get(rival.id);
    if (claim?.takeover === true && claim.nowMillis >= held.leaseExpiresAt) {
      // The lease had ended by the rival's clock when it claimed: the real time between the
      // owner's last heartbeat and the rival's claim (a starved machine) plus the skew between
      // their clocks outlasted the rest of the lease. A takeover after the lease ended, the
      // documented possibly-twice case the oracle explains by that takeover; not this case.
      rivalsAfterLeaseEnded.push(pk);
      note(pk, rival, `took over after the lease ended (${claim.nowMillis - held.leaseExpiresAt} ms late)`);
      return;
    }
    runtimeViolations.push(
      `${pk}: a delivery after the record's TTL, while the owner's heartbeat held the lease (until ${held.leaseExpiresAt}, record until ${held.expiresAt} s), ended ${String(outcome)} after a ${claim === undefined ? 'failed claim' : `${claim.takeover ? 'takeover' : 'fresh claim'} at ${claim.nowMillis}`}, expected in-flight (issue 12 item 3)`,
    );
  };

  const instances: Instance[] = Array.from({ length: options.instances }, (_, index) => {
    // Half the instances let the SDK retry once (a lost response then meets its own marker).
    const client = createLocalClient({ maxAttempts: index % 2 === 0 ? 1 : 2 });
    options.tamper?.(client);
    return {
      index,
      skewMillis: random.between(-MAX_SKEW_MILLIS, MAX_SKEW_MILLIS),
      client,
      handler: undefined as never,
      // At least one instance runs one invocation at a time (see `drain`).
      slots: options.instances > SHARED_PROCESS_SLOTS.length ? (SHARED_PROCESS_SLOTS[index] ?? 1) : 1,
      running: new Set<Invocation>(),
    };
  });
  // Instances whose clock is off by more than half the tolerance: a pair of them may be beyond it.
  injected['skewed clocks'] = instances.filter(
    (instance) => Math.abs(instance.skewMillis) > SKEW_TOLERANCE_MILLIS / 2,
  ).length;
  type Body = { id: string; amount: number };
  /** Big-key plans: which dedup key the toolkit made of each delivery. */
  const noteKey = (message: { readonly messageId: string; readonly dedupKey: string }): void => {
    const plan = planByMessageId.get(message.messageId.replace(/-rival$/, ''));
    if (plan?.kind !== 'big-key') return;
    const keys = keyedAs.get(plan.index) ?? new Set<string>();
    if (!keys.has(message.dedupKey)) {
      history.append({
        kind: 'keyed',
        message: `m${plan.index}`,
        keys:
          mode === 'two-phase'
            ? TWO_PHASE_EFFECTS.map((effect) => scopeKey(consumer, message.dedupKey, effect))
            : [scopeKey(consumer, message.dedupKey)],
      });
    }
    keys.add(message.dedupKey);
    keyedAs.set(plan.index, keys);
  };
  /** Atomic and entity handlers: nothing to write while the downstream outage lasts. */
  const failInOutage = (messageId: string): void => {
    if (inOutage(messageId)) throw outageError('A downstream dependency is down');
  };
  /** Creates an instance's handler: at its cold start, and again after a crash. */
  const handlerFactories = new Map<Instance, () => SqsHandler>();
  for (const instance of instances) {
    attachFaultInjection(instance.client.document, controllerOf(instance));
    const epochNow = () => current(instance)?.epoch ?? 0;
    const common = {
      consumer,
      client: instance.client.document,
      tableName: inboxTable,
      clock: clockOf(instance),
      dedupKey:
        options.keySource === 'deduplication-id' ? fromDeduplicationId() : fromBody<Body>((body) => body.id),
      ttlSeconds: TTL_SECONDS,
      logger: loggerOf(instance),
      logLevel: 'debug' as const,
      metrics: metricsOf(instance),
      ...(options.deadLetter === 'direct'
        ? { deadLetter: 'direct' as const, deadLetterSender: senderOf(instance) }
        : { deadLetter: 'redrive' as const }),
      ...(options.completedCacheEntries === undefined
        ? {}
        : { completedCache: { maxEntries: options.completedCacheEntries } }),
    };
    const createModeHandler = (): SqsHandler =>
      mode === 'atomic'
        ? createSqsHandler<Body>({
            ...common,
            mode: atomic(
              (message, unitOfWork) => {
                noteKey(message);
                failInOutage(message.messageId);
                unitOfWork.update(effectUpdate(message.scopedKey, message.body.amount, epochNow()));
              },
              { commit: options.atomicCommit ?? 'batch' },
            ),
          })
        : mode === 'marker'
          ? createSqsHandler<Body>({
              ...common,
              mode: marker(async (message) => {
                noteKey(message);
                const invocation = current(instance);
                if (inOutage(message.messageId)) throw outageError('The effect failed before it happened');
                if (faultOf(invocation, message.scopedKey) === 'effect-fails') {
                  note(message.scopedKey, invocation, 'effect failed before it happened');
                  throw new Error('The effect failed before it happened (injected)');
                }
                await instance.client.document.send(
                  new UpdateCommand(effectUpdate(message.scopedKey, message.body.amount, epochNow())),
                );
              }),
            })
          : mode === 'entity'
            ? createSqsHandler<Body>({
                ...common,
                mode: entity((message) => {
                  noteKey(message);
                  failInOutage(message.messageId);
                  return {
                    tableName: businessTable,
                    keyAttribute: 'pk',
                    item: { pk: message.scopedKey, amount: message.body.amount, epoch: epochNow() },
                  };
                }),
              })
            : createSqsHandler<Body>({
                ...common,
                mode: twoPhase({
                  handle: async (message, effects) => {
                    noteKey(message);
                    // One after the other: the second effect runs only once the first completed.
                    for (const effect of TWO_PHASE_EFFECTS) {
                      await effects.run(effect, ({ scopedKey, idempotencyKey }) =>
                        callDownstream(
                          instance,
                          scopedKey,
                          idempotencyKey,
                          message.body.amount,
                          message.messageId,
                        ),
                      );
                    }
                  },
                  leaseMillis: LEASE_MILLIS,
                  // Beats every lease/3 (real time): only slow effects (delayed heartbeats, expiries
                  // mid-effect) outlast one.
                  heartbeat: true,
                }),
              });
    const createHandler = (): SqsHandler => options.wrapHandler?.(createModeHandler()) ?? createModeHandler();
    handlerFactories.set(instance, createHandler);
    instance.handler = createHandler();
  }

  let invocationCount = 0;
  /** An invocation of `instance` on `batch` (faults drawn for each record when `faults`). */
  function newInvocation(
    instance: Instance,
    batch: readonly ReceivedMessage<PlannedCopyMeta>[],
    epoch: 0 | 1,
    faults: boolean,
  ): Invocation {
    const first = batch[0]!;
    const invocationRoll = chanceOf(seed, 'invocation', first.messageId, first.receiveCount);
    const invocation: Invocation = {
      id: ++invocationCount,
      instance,
      epoch,
      startVirtual: queue.now(),
      startReal: performance.now(),
      faultsByKey: new Map(),
      claims: new Map(),
      outcomeCrash: new Set(),
      receiveCounts: new Map(batch.map((received) => [received.messageId, received.receiveCount])),
      responseCrash: faults && invocationRoll < 0.03,
      deadline: faults && invocationRoll >= 0.03 && invocationRoll < 0.04,
      timeoutAt:
        faults && invocationRoll >= 0.04 && invocationRoll < 0.04 + (options.timeoutChance ?? 0.01)
          ? 1 + Math.floor(chanceOf(seed, 'timeout', first.messageId, first.receiveCount) * batch.length)
          : undefined,
      sent: 0,
      killed: deferred(),
      claimed: new Set(),
      shared: false,
      faults,
      markerWritten: new Map(),
      effectWritten: new Set(),
      markerReleased: new Map(),
      deliveryByKey: new Map(),
      updates: new Map(),
      events: new Map(),
      batch,
      jumpMillis: 0,
      jumpedClock: undefined,
      crashed: false,
    };
    for (const received of batch) {
      const fault = faults ? recordFaultOf(seed, mode, received) : undefined;
      // The record whose requests carry the fault: in two-phase mode one of the effects' records.
      const keys = received.meta.plan.effectKeys;
      const faultKey =
        keys === undefined
          ? undefined
          : keys[
              Math.floor(chanceOf(seed, 'effect', received.messageId, received.receiveCount) * keys.length)
            ];
      if (faultKey !== undefined) {
        const list = invocation.faultsByKey.get(faultKey) ?? [];
        list.push(fault);
        invocation.faultsByKey.set(faultKey, list);
      }
      for (const key of keys ?? []) {
        invocation.deliveryByKey.set(key, {
          messageId: received.messageId,
          receiveCount: received.receiveCount,
        });
      }
      if (fault === 'crash-after-outcome') invocation.outcomeCrash.add(received.messageId);
    }
    return invocation;
  }

  const recordsOf = (batch: readonly ReceivedMessage<PlannedCopyMeta>[]): SqsRecord[] =>
    batch.map((received) =>
      sqsRecordOf(received, {
        // The engine tells a FIFO queue by its ARN's `.fifo` suffix (`isFifoQueue`); a FIFO
        // queue's records carry the group, deduplication id and sequence number (`sqsRecordOf`).
        eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:reliability-${seed}${fifo ? '.fifo' : ''}`,
        messageAttributes: { ...received.meta.attributes },
        // A standard queue keeps no group order: its records carry the FIFO deduplication id
        // only, for the seeds keyed by it.
        ...(!fifo && options.keySource === 'deduplication-id' && received.meta.deduplicationId !== undefined
          ? { attributes: { MessageDeduplicationId: received.meta.deduplicationId } }
          : {}),
      }),
    );

  const lambdaContextOf = (invocation: Invocation) => ({
    awsRequestId: `s${seed}-i${invocation.id}`,
    functionName: `reliability-${seed}`,
    getRemainingTimeInMillis: () =>
      invocation.deadline ? 1000 : 60_000 - Math.floor(performance.now() - invocation.startReal),
  });

  const invoke = async (
    instance: Instance,
    batch: ReceivedMessage<PlannedCopyMeta>[],
    epoch: 0 | 1,
  ): Promise<void> => {
    const faults = batch.every((received) => received.receiveCount < FAULT_FREE_FROM_RECEIVE);
    const invocation = newInvocation(instance, batch, epoch, faults);
    const records = recordsOf(batch);
    const started = performance.now();
    const timed = batch.map((received) => {
      const delivery: Delivery = {
        planIndex: received.meta.plan.index,
        messageId: received.messageId,
        invocation: invocation.id,
        startedAt: started,
        endedAt: started,
      };
      deliveries.push(delivery);
      history.append({
        kind: 'delivered',
        message: `m${received.meta.plan.index}`,
        attempt: `${received.messageId} receive ${received.receiveCount}${epoch === 1 ? ' (window 1)' : ''}`,
      });
      return delivery;
    });
    const context = lambdaContextOf(invocation);
    // Another invocation running in this process shares the handler object with this one.
    instance.running.add(invocation);
    if (instance.running.size > 1) for (const running of instance.running) running.shared = true;
    for (const pk of invocation.deliveryByKey.keys()) {
      const ids = liveKeys.get(pk) ?? new Set<number>();
      ids.add(invocation.id);
      liveKeys.set(pk, ids);
    }

    let response: SqsBatchResponse | undefined;
    let thrown: unknown;
    const handled = invocationContext.run(invocation, async () => {
      try {
        response = await instance.handler({ Records: records }, context);
      } catch (error) {
        thrown = error;
      }
    });
    const killed = await Promise.race([
      handled.then(() => false),
      invocation.killed.promise.then(() => true),
    ]);
    instance.running.delete(invocation);
    for (const pk of invocation.deliveryByKey.keys()) liveKeys.get(pk)?.delete(invocation.id);
    if (invocation.shared) injected['invocations shared a process'] += 1;
    if (killed) {
      // Killed at its timeout: no response, so its whole batch comes back after the visibility
      // timeout. Lambda starts the execution environment again (a new handler); the old one runs
      // on with nobody waiting, its requests refused, those already in flight landing.
      instance.handler = handlerFactories.get(instance)!();
      if (options.completedCacheEntries !== undefined) coldRestarts += 1;
      const ended = performance.now();
      for (const delivery of timed) delivery.endedAt = ended;
      abandoned.push(
        handled.then(() => {
          if (mode !== 'marker') return;
          for (const key of unfollowedMarkers(invocation)) markerGaps.set(key, 'timeout');
        }),
      );
      if (options.acknowledgeTimedOut) for (const received of batch) queue.delete(received.receiptHandle);
      return;
    }
    // Nothing of the invocation waits any longer (a heartbeat held for a release that a crash
    // prevented is refused: its invocation is dead).
    for (const event of invocation.events.values()) event.resolve();
    const ended = performance.now();
    for (const delivery of timed) delivery.endedAt = ended;
    if (mode === 'marker') {
      for (const key of unfollowedMarkers(invocation)) {
        markerGaps.set(key, invocation.crashed ? 'crash' : 'lost response');
      }
    }
    if (trace !== undefined) {
      const failedIds = new Set(response?.batchItemFailures.map((failure) => failure.itemIdentifier));
      for (const received of batch) {
        const { plan } = received.meta;
        // A big key's record: the key the toolkit made of it (the first, if it made several).
        const bigKey = plan.kind === 'big-key' ? [...(keyedAs.get(plan.index) ?? [])][0] : undefined;
        const pk =
          plan.effectKeys?.[0] ??
          (bigKey === undefined
            ? undefined
            : scopeKey(consumer, bigKey, mode === 'two-phase' ? TWO_PHASE_EFFECTS[0] : undefined));
        if (pk === undefined) continue;
        const logged = lastOutcome.get(received.messageId);
        const ending = invocation.crashed
          ? 'crashed'
          : failedIds.has(received.messageId)
            ? 'reported as a batch item failure'
            : 'acknowledged';
        note(
          pk,
          invocation,
          `${received.messageId} (receive ${received.receiveCount}${invocation.faults ? '' : ', no faults'}) ${ending}, last outcome ${JSON.stringify(logged)}`,
        );
      }
    }
    // A crashed invocation returns nothing: its messages come back after the visibility timeout.
    if (invocation.crashed) {
      // Its process is gone: the instance starts again cold, with an empty cache.
      if (options.completedCacheEntries !== undefined) {
        instance.handler = handlerFactories.get(instance)!();
        coldRestarts += 1;
      }
      return;
    }
    if (thrown !== undefined || response === undefined) {
      runtimeViolations.push(`invocation ${invocation.id}: the handler threw ${String(thrown)}`);
      return;
    }
    const ids = new Set(batch.map((received) => received.messageId));
    const failures = response.batchItemFailures.map((failure) => failure.itemIdentifier);
    const unknown = failures.filter((id) => !ids.has(id));
    if (unknown.length > 0) {
      // Lambda fails the whole batch when an identifier is not in it.
      runtimeViolations.push(`invocation ${invocation.id}: batch item failures not in the batch: ${unknown}`);
      return;
    }
    const failed = new Set(failures);
    for (const received of batch) {
      if (failed.has(received.messageId)) continue;
      if (!queue.delete(received.receiptHandle)) {
        runtimeViolations.push(`invocation ${invocation.id}: stale receipt handle for ${received.messageId}`);
      }
    }
  };

  /** Runs invocations until every message sent so far is deleted or dead-lettered. */
  const drain = async (): Promise<void> => {
    // One entry per slot: an instance with several runs that many invocations at once.
    const idle = instances.flatMap((instance) => Array.from({ length: instance.slots }, () => instance));
    const running = new Map<
      Promise<void>,
      { readonly exclusive: boolean; readonly keys: ReadonlySet<number> }
    >();
    // An expiry redelivery stands for a moment beyond the TTL (and an expiry mid-effect moves
    // there): nothing of its key may still be running then, and nothing of its key starts until
    // it is done (other keys run on).
    const clashes = (exclusive: boolean, keys: ReadonlySet<number>): boolean =>
      [...running.values()].some(
        (other) => (exclusive || other.exclusive) && [...keys].some((key) => other.keys.has(key)),
      );
    for (;;) {
      while (idle.length > 0) {
        const batch = queue.receive(BATCH_SIZE);
        if (batch.length === 0) break;
        const keys = new Set(batch.map((received) => received.meta.plan.keyIndex));
        // The batch's epoch is decided once nothing of its keys runs any more: an expiry
        // mid-effect running now may move its key a TTL ahead (time only moves forward), and a
        // copy received meanwhile must then run there too, never two days before the record
        // the owner's jumped clock wrote (soak seed 14).
        let epoch: 0 | 1 = 0;
        let exclusive = false;
        let slot = 0;
        for (;;) {
          epoch = epochOf(batch[0]!.meta);
          exclusive = epoch === 1 || batch.some((received) => received.meta.plan.expiryMidEffect);
          // Such a batch also runs alone in its process: another invocation's crash there would
          // kill an owner whose record then expires for want of heartbeats, the moment standing
          // for a TTL later with no redelivery planned to open that live window.
          slot = exclusive ? idle.findIndex((instance) => instance.slots === 1) : 0;
          if (slot >= 0 && !clashes(exclusive, keys)) break;
          await Promise.race(running.keys());
        }
        if (epoch === 1) for (const key of keys) keysInEpochOne.add(key);
        const instance = idle.splice(slot, 1)[0]!;
        const run: Promise<void> = invoke(instance, batch, epoch).finally(() => {
          running.delete(run);
          idle.push(instance);
        });
        running.set(run, { exclusive, keys });
      }
      if (running.size > 0) {
        await Promise.race(running.keys());
        continue;
      }
      if (!queue.advance()) break;
    }
  };

  /** The message attributes a dead letter sent by the real SQS sender arrives with. */
  const redrivenAttributes = (letter: DeadLetterMessage): Record<string, SqsMessageAttribute> =>
    toSqsRecord({ MessageId: letter.sourceMessageId, MessageAttributes: toDeadLetterAttributes(letter) })
      .messageAttributes;

  /** Lets every late copy still on its way land (the queue drained: nothing follows on its record). */
  const landLate = async (): Promise<void> => {
    for (const pk of [...lateByKey.keys()]) sendLate(pk);
    await Promise.all([...lateInFlight, ...abandoned]);
  };

  try {
    await drain();
    await landLate();
    // The outage is over: an operator redrives the dead-letter queue (half-completed messages),
    // and some completed messages come back the same way. AWS gives each a new message id.
    phase = 2;
    for (const plan of plans) {
      for (const copy of plan.copies) {
        if (copy.redriveOf === undefined) continue;
        const state = queue.stateOf(copy.redriveOf);
        // Dead-lettered directly, the redriven message carries what the sender attached.
        const letter = directDeadLetters.find((candidate) => candidate.sourceMessageId === copy.redriveOf);
        const expected = stateBeforeRedrive(plan, options.deadLetter, lastOutcome.get(copy.redriveOf)?.code);
        const direct = expected === 'dead-lettered directly';
        const actual = direct && state === 'deleted' && letter !== undefined ? expected : state;
        // Marker mode acknowledges a copy meeting a marker as a duplicate, in the outage too.
        const gap = mode === 'marker' && (plan.outage || markerGaps.has(plan.scopedKey ?? ''));
        // FIFO, by the redrive policy: moved with a failed message of its group it was received
        // with (the oracle's `behindGroup`), in the dead-letter queue with its group's reason.
        const behindGroup =
          fifo && state === 'dead-lettered' && lastOutcome.get(copy.redriveOf)?.code === 'GROUP_BLOCKED';
        if (actual !== expected && !gap && !behindGroup) {
          runtimeViolations.push(
            `m${plan.index}: ${copy.redriveOf} is ${actual} before its redrive, expected ${expected}`,
          );
        }
        injected.redrives += 1;
        queue.send({
          messageId: copy.messageId,
          body: copy.body,
          meta: metaOf(plan, copy, letter === undefined ? undefined : redrivenAttributes(letter)),
        });
      }
    }
    await drain();
    await landLate();
    for (const moved of queue.redriven) {
      const logged = lastOutcome.get(moved.messageId);
      history.append({
        kind: 'dead-lettered',
        message: `m${moved.meta.plan.index}`,
        code: logged?.code ?? '',
        reason: logged?.reason ?? '',
      });
    }
    for (const [key, gap] of markerGaps) {
      history.append({
        kind: 'excused',
        key,
        why: `marker left without its effect (${gap}, at-most-once by design)`,
      });
    }
    if (fifo) {
      // The queue deduplicated what the plan says a FIFO queue deduplicates, and nothing else.
      const expected = fifoDeduplicatedCopies(planned);
      for (const copy of planned.flatMap((plan) => plan.copies)) {
        if (copy.redriveOf !== undefined) continue;
        const deduplicated = queue.stateOf(copy.messageId) === 'deduplicated';
        if (deduplicated !== expected.has(copy.messageId)) {
          runtimeViolations.push(
            `${copy.messageId}: ${deduplicated ? 'deduplicated' : 'delivered'} by the FIFO queue, expected ${deduplicated ? 'delivered' : 'deduplicated'}`,
          );
        }
      }
    }
  } finally {
    for (const instance of instances) instance.client.raw.destroy();
  }

  return {
    options,
    plans,
    queue,
    directDeadLetters,
    lastOutcome,
    deliveries,
    effectWrites,
    markerGaps,
    downstream: { executions, applied, takeovers, failedAfterExecution },
    crashes,
    trace,
    invocations: invocationCount,
    actions,
    runtimeViolations,
    virtualMillis: queue.now() - options.startMillis,
    keyedAs,
    injected,
    rivalsAfterLeaseEnded,
    cacheHits,
    coldRestarts,
    throttles,
    racingConflicts,
    throttledRequests,
    history: history.entries,
    ...(fifo ? { fifo: fifoCountsOf(planned, plans, groupBlocked) } : {}),
  };
}

/** What a FIFO seed's queue deduplicated and delivered, from its plan as planned and as accepted. */
function fifoCountsOf(
  planned: readonly PlannedMessage[],
  accepted: readonly PlannedMessage[],
  groupBlocked: number,
): FifoCounts {
  const deduplicated = fifoDeduplicatedCopies(planned);
  // A producer copy after the first that the queue delivered: sent again after the interval.
  const resentAfterWindow = accepted.reduce(
    (sum, plan) =>
      sum +
      plan.copies.filter(
        (copy) =>
          copy.redriveOf === undefined && copy.messageId !== plan.copies[0]!.messageId && copy.epoch === 0,
      ).length,
    0,
  );
  return {
    groups: new Set(accepted.map((plan) => plan.group)).size,
    deduplicated: deduplicated.size,
    resentAfterWindow,
    groupBlocked,
  };
}

/**
 * Where the copy a redrive sends again must be before the redrive: in the dead-letter queue for
 * a message that met an outage, or that lost its key to another payload (its last logged outcome
 * `PAYLOAD_MISMATCH`: a completed message redriven again may be the loser of a raced pair);
 * acknowledged (`deleted`) otherwise. Dead-lettered directly, a copy is acknowledged once the
 * sender sent it. Which member of a pair won is the oracle's to check, from the stored
 * fingerprint.
 */
export function stateBeforeRedrive(
  plan: Pick<PlannedMessage, 'outage'>,
  deadLetter: DeadLetterStyle,
  lastCode: string | undefined,
): 'deleted' | 'dead-lettered' | 'dead-lettered directly' {
  if (!plan.outage && lastCode !== 'PAYLOAD_MISMATCH') return 'deleted';
  return deadLetter === 'direct' ? 'dead-lettered directly' : 'dead-lettered';
}

/** Adds `owner` (a claim's owner token, when it is one) to the owners of `pk`. */
export function addOwner(owners: Map<string, Set<string>>, pk: string, owner: unknown): void {
  if (typeof owner !== 'string') return;
  const set = owners.get(pk) ?? new Set<string>();
  set.add(owner);
  owners.set(pk, set);
}

/**
 * Marker mode: the keys an invocation left with a marker that it neither followed by the effect
 * nor released (a crash in between, or a lost response to the marker write). Counted per claim,
 * by owner token: two deliveries of one key in a batch run one after the other, so the first
 * one's marker may be released (its effect failed) and the second one's written again and left
 * without the effect; the first one's release says nothing of the second one's marker.
 */
export function unfollowedMarkers(invocation: {
  readonly markerWritten: ReadonlyMap<string, ReadonlySet<string>>;
  readonly effectWritten: ReadonlySet<string>;
  readonly markerReleased: ReadonlyMap<string, ReadonlySet<string>>;
}): string[] {
  return [...invocation.markerWritten].flatMap(([key, owners]) =>
    !invocation.effectWritten.has(key) &&
    [...owners].some((owner) => !invocation.markerReleased.get(key)?.has(owner))
      ? [key]
      : [],
  );
}

/** The IAM action of each kind of `TransactWriteItems` item. */
const TRANSACTION_ITEM_ACTIONS: Readonly<Record<string, string>> = {
  Put: 'PutItem',
  Update: 'UpdateItem',
  Delete: 'DeleteItem',
  ConditionCheck: 'ConditionCheckItem',
};

/** Adds the IAM actions `request` needs, by table, to `actions`. */
export function recordActions(actions: Map<string, Set<string>>, request: DynamoRequest): void {
  const add = (table: unknown, action: string) => {
    if (typeof table !== 'string') return;
    const set = actions.get(table) ?? new Set<string>();
    set.add(`dynamodb:${action}`);
    actions.set(table, set);
  };
  if (request.operation !== 'TransactWriteItems') {
    add(request.input.TableName, request.operation);
    return;
  }
  for (const item of (request.input.TransactItems ?? []) as Record<string, { TableName?: unknown }>[]) {
    for (const [kind, body] of Object.entries(item))
      add(body?.TableName, TRANSACTION_ITEM_ACTIONS[kind] ?? kind);
  }
}
