/**
 * The oracle of the fault-injection suite: reads the end state (business items and inbox
 * records on the emulator, the simulated queues) and checks every planned message.
 *
 * ## Live windows
 *
 * An inbox record expires by design (TTL), and an expired record counts as absent, so a
 * message redelivered after its record expired is processed again: that second effect is
 * correct. The oracle therefore counts effects per *live window*, not per key. The simulation
 * uses two windows: epoch 0 (every instance's clock, within 5 s of the queue's time) and
 * epoch 1 (an expiry redelivery, received alone by an instance whose clock is twice the TTL
 * ahead, where every record written in epoch 0 has expired and every record written in epoch
 * 1 is live for the rest of the run; time only moves forward, so every later delivery of that
 * key is in epoch 1 too). Each effect appends the epoch it ran in to the business
 * item (`epochs`, in commit order) next to `ADD effects :one`; an effect that does not open a
 * new, later window is a duplicate effect:
 *
 * - `[0]`, `[1]`, `[0, 1]` are correct (`[0, 1]`: processed, expired, processed again);
 * - `[0, 0]`, `[1, 1]`, `[1, 0]` each hold one duplicate effect;
 * - only messages planned with an expiry redelivery may have an epoch-1 effect.
 *
 * An epoch-1 redelivery stands for a moment a whole TTL later, so the simulation runs it only
 * while nothing else of its key runs: effects land in the order of their windows in every mode.
 *
 * Two-phase mode runs effects outside DynamoDB (here two, `charge` then `notify`, each under
 * its own inbox record) against a simulated downstream service that deduplicates by the
 * derived `idempotencyKey`, as the toolkit asks of external APIs. Two-phase is at-least-once by
 * design: a claim whose lease ended (its invocation crashed mid-effect, or an instance whose
 * clock runs ahead sees it ended) is taken over and the effect runs again, and an effect whose
 * answer was lost is released and runs again. So the oracle counts *executions* per effect
 * record and live window, and allows one plus one per takeover and per lost answer in that
 * window; anything beyond is a duplicate effect. The effect the outside world sees (the first
 * execution per idempotency key) must exist, with the winner's payload, and every effect
 * record of the winner must be `COMPLETED` with its fingerprint.
 *
 * Entity mode has no expiry: the business item is the marker and never expires, so it must be
 * written exactly once even across the epoch-1 redelivery (counted on the wire: successful
 * conditional puts of the item).
 *
 * ## Per message
 *
 * - valid, winning its key: every copy acknowledged, none dead-lettered; its effect present
 *   with its payload (`amount`); the marker (or the entity) carries its fingerprint;
 * - valid, losing its key to another payload (the pair is raced on purpose): every copy
 *   dead-lettered with `PAYLOAD_MISMATCH`; exactly one member of the pair wins;
 * - malformed JSON, missing key, a key with a lone surrogate: every copy dead-lettered with
 *   `MALFORMED_BODY` / `MISSING_KEY` / `INVALID_KEY`, with a non-empty reason (direct: the
 *   dead-letter message; redrive: the last logged outcome);
 * - a numeric id beyond 2^53: every copy dead-lettered as `INVALID_KEY`, or processed under a
 *   key no other big id got (distinct ids that round to one double are never merged); in marker
 *   mode its effect may be missing only where any key's may (an at-most-once gap, below);
 * - a message that met an outage: its copies in the dead-letter queue (directly, `PERMANENT`, or
 *   by the redrive policy), its redriven copies acknowledged, its effects there once.
 *
 * Also checked, from what the simulation saw: no heartbeat lands after its claim was released
 * or completed (it would revive the claim); a delivery after a record's TTL, while the owner's
 * heartbeat holds the lease, finds the claim in flight; in marker mode the marker of a
 * completed effect is still `COMPLETED` at the end (a late release would let the next delivery
 * run the effect again); without an expiry redelivery, both epochs are one live window.
 *
 * Marker mode is at-most-once for the effect by design (see `MarkerModeOptions`): a crash
 * between the marker and the effect leaves the marker without the effect, and every later
 * delivery is acknowledged as a duplicate. So does a lost response to the marker write when
 * the redelivery is what retries it: it meets the marker and cannot tell it was never followed
 * by the effect. So does a delayed copy of a concurrent delivery's marker put (answered as a
 * duplicate while another delivery ran) landing after that delivery released its marker. The
 * simulation records every marker written by an invocation that neither wrote
 * the effect nor released that marker (`markerGaps`; per claim, by owner token, so the release of
 * one delivery's marker does not hide the next delivery's marker of the key in the same batch);
 * a missing effect is excused only for those keys, and counted as an at-most-once gap, not as
 * lost. A missing effect anywhere else is lost.
 *
 * The run's history is checked too (`history.ts`): per key, each effect DynamoDB (or, in two-phase
 * mode, the downstream service) applied opens a later live window; every message is applied with
 * its payload, dead-lettered with a reason, or excused as a marker-mode gap, and nothing is
 * applied that no message asked for. The first violation is reported with its seed and the
 * entries that show it. The queue is a standard one: there is no message group order to check.
 *
 * Counted: N messages (logical, planned), D duplicate deliveries (deliveries beyond the first,
 * redeliveries of the same copy included), C crashes injected, E duplicate effects, L lost
 * messages (not processed and not dead-lettered, or a copy left in the queue).
 */

import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { ENTITY_FINGERPRINT_ATTRIBUTE } from '../../../lambda/core/contract';
import { scopeKey } from '../../../lambda/core/dedup-key';
import { checkRunHistory, type HistoryCoverage } from './history';
import {
  consumerOf,
  type EpochEvents,
  type FifoCounts,
  type InjectedFault,
  type PlannedMessage,
  type QueueType,
  type RequestKind,
  type SimulationResult,
  type ThrottleCounts,
  TWO_PHASE_EFFECTS,
} from './simulation';
import { readItems } from './tables';

/** What one seed amounted to. */
export interface SeedReport {
  readonly seed: number;
  readonly mode: string;
  /** The queue type: standard, or FIFO (with its `fifo` counts). */
  readonly queue: QueueType;
  readonly deadLetter: string;
  /** Entries of each instance's completed-record cache; `undefined` with the cache off. */
  readonly completedCacheEntries: number | undefined;
  /** How an atomic seed committed its batches; `undefined` in the other modes. */
  readonly atomicCommit: 'batch' | 'message' | undefined;
  /** Duplicates acknowledged from an instance's cache, without a request. */
  readonly cacheHits: number;
  /** Instances started again cold (cache empty) after a crash; 0 with the cache off. */
  readonly coldRestarts: number;
  readonly messages: number;
  readonly deliveries: number;
  readonly duplicateDeliveries: number;
  readonly crashes: number;
  readonly crashesByPoint: Readonly<Record<string, number>>;
  readonly duplicateEffects: number;
  readonly lost: number;
  /** Messages delivered two or more times (any copy, any reason). */
  readonly deliveredTwice: number;
  /** Messages with two deliveries in different invocations that overlapped in time. */
  readonly deliveredConcurrently: number;
  /** Keys processed again after their record expired (`[0, 1]`). */
  readonly reprocessedAfterExpiry: number;
  /**
   * Marker-mode keys whose effect is missing by design (at-most-once), by cause: a crash
   * between marker and effect, a lost response to the marker write, or a concurrent delivery's
   * late marker put landing after a release (`late claim`).
   */
  readonly atMostOnceGaps: Readonly<Record<string, number>>;
  /**
   * Two-phase: executions of an effect beyond the first in a live window, each explained by a
   * takeover or a lost answer, and deduplicated downstream by the derived idempotency key.
   */
  readonly reexecutionsDeduplicated: number;
  /** Two-phase: claims taken over after their lease ended. */
  readonly takeovers: number;
  /**
   * Two-phase: expiries mid-effect whose rival found the lease ended by its clock (the machine
   * was too slow, or the clocks too far apart, for the heartbeat to hold it): counted in
   * `takeovers`, and explained by them like any other.
   */
  readonly rivalsAfterLeaseEnded: number;
  readonly deadLettered: number;
  /** Fault classes beyond crashes, as injected. */
  readonly injected: Readonly<Record<InjectedFault, number>>;
  /** The throttling errors among them, by code and after an applied request. */
  readonly throttles: Readonly<ThrottleCounts>;
  /** The transaction conflicts among them on a commit racing a concurrent delivery. */
  readonly racingConflicts: number;
  /** The throttling errors injected, by the kind of request they answered. */
  readonly throttledRequests: Readonly<Partial<Record<RequestKind, number>>>;
  readonly invocations: number;
  readonly virtualSeconds: number;
  /** What the history checker covered (`history.ts`): the keys whose effects it followed. */
  readonly history: HistoryCoverage;
  /**
   * FIFO seeds: what the queue deduplicated and how its groups went, and the messages dead-lettered
   * by the redrive policy behind a failed message of their group (`behindGroup`).
   */
  readonly fifo?: FifoCounts & { readonly deadLetteredBehindGroup: number };
  /** Everything that broke the contract; empty when the seed passed. */
  readonly violations: readonly string[];
  /**
   * With `RELIABILITY_TRACE=1`: the trace of every record key named in a violation, of each key
   * in `rivalsAfterLeaseEnded`, and of each big key excused as an at-most-once gap.
   */
  readonly traces?: Readonly<Record<string, readonly string[]>>;
}

/** Effects that do not open a new, later live window (`epochs` in the order the effects landed). */
export function duplicateEffectsOf(epochs: readonly number[]): number {
  let duplicates = 0;
  epochs.forEach((epoch, index) => {
    if (index > 0 && epoch <= epochs[index - 1]!) duplicates += 1;
  });
  return duplicates;
}

function countConcurrent(result: SimulationResult): Map<number, boolean> {
  const byPlan = new Map<number, { invocation: number; startedAt: number; endedAt: number }[]>();
  for (const delivery of result.deliveries) {
    const list = byPlan.get(delivery.planIndex) ?? [];
    list.push(delivery);
    byPlan.set(delivery.planIndex, list);
  }
  const concurrent = new Map<number, boolean>();
  for (const [planIndex, list] of byPlan) {
    let found = false;
    for (let i = 0; i < list.length && !found; i += 1) {
      for (let j = i + 1; j < list.length && !found; j += 1) {
        const a = list[i]!;
        const b = list[j]!;
        found = a.invocation !== b.invocation && a.startedAt < b.endedAt && b.startedAt < a.endedAt;
      }
    }
    concurrent.set(planIndex, found);
  }
  return concurrent;
}

/** Reads the end state and checks every planned message of one seed. */
export async function checkSeed(
  result: SimulationResult,
  reader: DynamoDBDocumentClient,
): Promise<SeedReport> {
  const { options, plans, queue } = result;
  const { mode } = options;
  const violations: string[] = [];
  const violate = (message: string) => violations.push(message);
  for (const violation of result.runtimeViolations) violate(violation);

  const consumer = consumerOf(options.seed, mode, options.queue);
  /** The record keys the toolkit used for each big-key plan (its effects' in two-phase mode). */
  const bigKeyRecords = new Map<number, string[]>();
  for (const [index, dedupKeys] of result.keyedAs) {
    bigKeyRecords.set(
      index,
      [...dedupKeys].flatMap((dedupKey) =>
        mode === 'two-phase'
          ? TWO_PHASE_EFFECTS.map((effect) => scopeKey(consumer, dedupKey, effect))
          : [scopeKey(consumer, dedupKey)],
      ),
    );
  }
  const bigKeys = [...bigKeyRecords.values()].flat();
  const scopedKeys = [
    ...plans.flatMap((plan) => (plan.scopedKey === undefined ? [] : [plan.scopedKey])),
    ...bigKeys,
  ];
  const effectKeys = [...plans.flatMap((plan) => plan.effectKeys ?? []), ...bigKeys];
  const business =
    mode === 'two-phase' ? new Map() : await readItems(reader, options.businessTable, scopedKeys);
  const inbox = mode === 'entity' ? new Map() : await readItems(reader, options.inboxTable, effectKeys);

  const directByCopy = new Map<string, { code: string; reason: string; body: string }[]>();
  for (const letter of result.directDeadLetters) {
    const list = directByCopy.get(letter.sourceMessageId) ?? [];
    list.push({ code: letter.code, reason: letter.reason, body: letter.body });
    directByCopy.set(letter.sourceMessageId, list);
  }

  let lost = 0;
  let deadLettered = 0;
  /**
   * FIFO seeds dead-lettering by the redrive policy: a copy the queue moved to the dead-letter
   * queue while the engine held it back behind a failed message of its group in the same batch
   * (`GROUP_BLOCKED`). AWS counts a receive of every message of the batch, so a permanent failure
   * left to the redrive policy takes the messages received with it, each time, to the dead-letter
   * queue with it: in the dead-letter queue, with its group's reason, never lost (and redrivable).
   */
  const behindGroup = (copy: PlannedMessage['copies'][number]): boolean =>
    options.queue === 'fifo' &&
    queue.stateOf(copy.messageId) === 'dead-lettered' &&
    result.lastOutcome.get(copy.messageId)?.code === 'GROUP_BLOCKED';
  let deadLetteredBehindGroup = 0;
  /** Checks that every copy of `plan` was dead-lettered with `code` and a reason. */
  const expectDeadLettered = (plan: PlannedMessage, code: string): boolean => {
    let ok = true;
    for (const copy of plan.copies) {
      const state = queue.stateOf(copy.messageId);
      if (options.deadLetter === 'direct') {
        const letters = directByCopy.get(copy.messageId) ?? [];
        if (state !== 'deleted' || letters.length === 0) {
          violate(
            `m${plan.index} copy ${copy.messageId}: expected in the dead-letter queue (${code}), state ${state}, ${letters.length} sent`,
          );
          ok = false;
          continue;
        }
        for (const letter of letters) {
          if (letter.code !== code || letter.reason === '' || letter.body !== copy.body) {
            violate(
              `m${plan.index} copy ${copy.messageId}: dead-lettered as ${letter.code} (${letter.reason}), expected ${code} with the original body`,
            );
            ok = false;
          }
        }
      } else {
        const logged = result.lastOutcome.get(copy.messageId);
        if (state !== 'dead-lettered') {
          violate(
            `m${plan.index} copy ${copy.messageId}: expected redriven to the dead-letter queue (${code}), state ${state}`,
          );
          ok = false;
        } else if ((logged?.code !== code || !logged.reason) && !behindGroup(copy)) {
          violate(
            `m${plan.index} copy ${copy.messageId}: redriven, but the last logged outcome is ${JSON.stringify(logged)}, expected ${code} with a reason`,
          );
          ok = false;
        }
      }
    }
    if (ok) deadLettered += 1;
    return ok;
  };
  /**
   * Checks that every copy of `plan` was acknowledged and none dead-lettered, except, for a
   * message that met an outage, the copies the queue moved to the dead-letter queue and a redrive
   * brought back under new ids.
   */
  const expectAcknowledged = (plan: PlannedMessage): void => {
    const redriven = new Set(
      plan.copies.flatMap((copy) => (copy.redriveOf === undefined ? [] : [copy.redriveOf])),
    );
    for (const copy of plan.copies) {
      if (behindGroup(copy)) continue;
      const state = queue.stateOf(copy.messageId);
      const letters = directByCopy.get(copy.messageId) ?? [];
      // Dead-lettered in the outage: directly (acknowledged, one dead letter at least, PERMANENT),
      // or by the queue's redrive policy.
      const directly = options.deadLetter === 'direct';
      const source = plan.outage && redriven.has(copy.messageId);
      const expected = source && !directly ? 'dead-lettered' : 'deleted';
      const lettersOk =
        source && directly
          ? letters.length > 0 && letters.every((letter) => letter.code === 'PERMANENT')
          : letters.length === 0;
      // Marker mode acknowledges a delivery that meets a marker as a duplicate: after a gap (the
      // marker without its effect), or while the marker's own delivery still runs its effect
      // (which then fails in the outage and is released).
      const gap =
        mode === 'marker' && (result.markerGaps.has(plan.scopedKey ?? '') || source) && state === 'deleted';
      if ((state !== expected && !gap) || !(lettersOk || gap)) {
        violate(
          `m${plan.index} (${plan.scopedKey}) copy ${copy.messageId}: expected ${expected === 'deleted' ? 'acknowledged' : 'in the dead-letter queue, redriven'}, state ${state}, dead letters ${JSON.stringify(letters.map((l) => l.code))}, last outcome ${JSON.stringify(result.lastOutcome.get(copy.messageId))}`,
        );
      }
    }
  };

  // Every copy ended somewhere: nothing is left in the queue.
  for (const plan of plans) {
    for (const copy of plan.copies) {
      const state = queue.stateOf(copy.messageId);
      if (state !== 'deleted' && state !== 'dead-lettered') {
        violate(`m${plan.index} copy ${copy.messageId}: still ${state} at the end`);
      }
    }
  }

  let duplicateEffects = 0;
  let reprocessedAfterExpiry = 0;
  let reexecutionsDeduplicated = 0;
  const atMostOnceGaps: Record<string, number> = {};
  const byKey = new Map<string, PlannedMessage[]>();
  const appliedByPk = new Map<string, { amount: number; count: number }>();
  for (const entry of result.downstream.applied.values()) appliedByPk.set(entry.pk, entry);

  // Big keys: distinct ids are processed separately, or dead-lettered as INVALID_KEY; never merged.
  const bigKeyOwners = new Map<string, number[]>();
  for (const [index, records] of bigKeyRecords) {
    for (const pk of records) bigKeyOwners.set(pk, [...(bigKeyOwners.get(pk) ?? []), index]);
  }
  /** The amount and the number of effects the effect record `pk` holds. */
  const effectAt = (pk: string): { readonly amount: number; readonly effects: number } => {
    if (mode === 'two-phase') {
      return {
        amount: Number(appliedByPk.get(pk)?.amount),
        effects: (result.downstream.executions.get(pk) ?? []).length,
      };
    }
    const item = business.get(pk) as { amount?: unknown; effects?: unknown } | undefined;
    return {
      amount: Number(item?.amount),
      effects: mode === 'entity' ? (result.effectWrites.get(pk) ?? 0) : Number(item?.effects ?? 0),
    };
  };
  /** Big-key records excused as an at-most-once gap (traced with `RELIABILITY_TRACE=1`). */
  const bigKeyGaps: string[] = [];
  const checkBigKey = (plan: PlannedMessage): boolean => {
    const records = bigKeyRecords.get(plan.index) ?? [];
    if (records.length === 0) {
      if (expectDeadLettered(plan, 'INVALID_KEY')) return true;
      violate(
        `m${plan.index} (id ${plan.bigKey}): neither processed under its own key nor dead-lettered as INVALID_KEY (issue 12 item 1)`,
      );
      return false;
    }
    const merged = records.flatMap((pk) =>
      (bigKeyOwners.get(pk) ?? []).filter((other) => other !== plan.index),
    );
    if (merged.length > 0) {
      violate(
        `m${plan.index} (id ${plan.bigKey}): keyed like the big id(s) of m${[...new Set(merged)].join(', m')} (issue 12 item 1)`,
      );
      return false;
    }
    const perKey = mode === 'two-phase' ? TWO_PHASE_EFFECTS.length : 1;
    if (records.length !== perKey) {
      violate(
        `m${plan.index} (id ${plan.bigKey}): its deliveries got ${records.length / perKey} different keys`,
      );
      return false;
    }
    expectAcknowledged(plan);
    for (const pk of records) {
      const effect = effectAt(pk);
      // Marker mode's at-most-once gap, as for any other key: the simulation saw an invocation
      // write this marker and neither write the effect nor release the marker.
      const gap = mode === 'marker' && effect.effects === 0 ? result.markerGaps.get(pk) : undefined;
      if (gap !== undefined) {
        atMostOnceGaps[gap] = (atMostOnceGaps[gap] ?? 0) + 1;
        bigKeyGaps.push(pk);
        continue;
      }
      if (effect.amount !== plan.amount || effect.effects < 1) {
        violate(
          `m${plan.index} (id ${plan.bigKey}): the effect at ${pk} is ${JSON.stringify(effect)}, expected amount ${plan.amount}`,
        );
        return false;
      }
    }
    return true;
  };

  for (const plan of plans) {
    if (plan.kind === 'big-key') {
      if (!checkBigKey(plan)) lost += 1;
      continue;
    }
    if (plan.scopedKey === undefined) {
      if (!expectDeadLettered(plan, plan.expectedCode!)) lost += 1;
      continue;
    }
    const group = byKey.get(plan.scopedKey) ?? [];
    group.push(plan);
    byKey.set(plan.scopedKey, group);
  }

  const epochCount = (events: EpochEvents, key: string, epoch: number) =>
    (events.get(key) ?? []).filter((tagged) => tagged === epoch).length;

  for (const [pk, group] of byKey) {
    const expiry = group.some((plan) => plan.expiry);
    let storedFingerprint: string | undefined;
    let keyDuplicates = 0;
    /** Why the winner's effect is not all there, if it is not. */
    let missing: string | undefined;
    let amount: number | undefined;
    let epochs: number[];

    if (mode === 'two-phase') {
      // One inbox record and one downstream effect per effect name; the oracle counts executions.
      const keys = group[0]!.effectKeys!;
      storedFingerprint = inbox.get(keys[0]!)?.fingerprint as string | undefined;
      const winnerFingerprint = group.find((plan) => plan.fingerprint === storedFingerprint)?.fingerprint;
      epochs = [];
      for (const key of keys) {
        const record = inbox.get(key);
        const executed = result.downstream.executions.get(key) ?? [];
        // Without an expiry redelivery both epochs are one live window: a record that expired
        // while its effect ran (held by heartbeats) must still count as live.
        for (const window of expiry ? [[0], [1]] : [[0, 1]]) {
          const inWindow = (events: EpochEvents) =>
            window.reduce((sum, epoch) => sum + epochCount(events, key, epoch), 0);
          const count = executed.filter((tagged) => window.includes(tagged)).length;
          // A second execution needs a reason: the claim was taken over after its lease ended,
          // or the effect's answer was lost and the claim released. Downstream deduplicates both.
          const takeovers = inWindow(result.downstream.takeovers);
          const lostAnswers = inWindow(result.downstream.failedAfterExecution);
          const allowed = count === 0 ? 0 : 1 + takeovers + lostAnswers;
          if (count > allowed) {
            keyDuplicates += count - allowed;
            violate(
              `${key}: ${count} executions in epoch(s) ${window.join(', ')}, ${allowed} explained (takeovers ${takeovers}, lost answers ${lostAnswers})`,
            );
          }
        }
        reexecutionsDeduplicated += executed.length - new Set(executed).size;
        if (epochs.length === 0) epochs = [...new Set(executed)].sort();
        if (winnerFingerprint === undefined) continue;
        const appliedEffect = appliedByPk.get(key);
        if (record?.status !== 'COMPLETED' || record.fingerprint !== winnerFingerprint) {
          missing ??= `${key} is ${record === undefined ? 'absent' : `${String(record.status)} with fingerprint ${String(record.fingerprint).slice(0, 8)}`}`;
        } else if (appliedEffect === undefined) {
          missing ??= `${key} completed, but its effect never reached the downstream service`;
        } else if (amount === undefined || amount === appliedEffect.amount) {
          amount = appliedEffect.amount;
        } else {
          violate(`${pk}: the effects applied different amounts`);
        }
      }
    } else {
      const item = business.get(pk);
      storedFingerprint =
        mode === 'entity'
          ? (item?.[ENTITY_FINGERPRINT_ATTRIBUTE] as string | undefined)
          : (inbox.get(pk)?.fingerprint as string | undefined);
      const wireEffects = result.effectWrites.get(pk) ?? 0;
      let effects: number;
      if (mode === 'entity') {
        effects = wireEffects;
        epochs = Array.from({ length: effects }, () => 0);
        if ((item !== undefined) !== effects > 0) {
          violate(`${pk}: entity item ${item ? 'present' : 'absent'} after ${effects} successful puts`);
        }
      } else {
        effects = Number(item?.effects ?? 0);
        epochs = ((item?.epochs as unknown[] | undefined) ?? []).map(Number);
        if (epochs.length !== effects)
          violate(`${pk}: effects ${effects} but ${epochs.length} epochs recorded`);
        if (wireEffects !== effects) {
          violate(
            `${pk}: ${wireEffects} successful effect writes on the wire, effects ${effects} in the item`,
          );
        }
      }
      keyDuplicates = duplicateEffectsOf(epochs);
      if (keyDuplicates > 0) {
        violate(
          `${pk}: ${keyDuplicates} duplicate effect(s), effects in live windows ${JSON.stringify(epochs)}`,
        );
      }
      if (effects === 0) missing = 'marker present, effect missing';
      else amount = Number(item?.amount);
      const marker = inbox.get(pk);
      if (mode === 'marker' && marker !== undefined && marker.status !== 'COMPLETED' && effects > 0) {
        // Released after its effect happened: the next delivery of the key would run it again.
        violate(
          `${pk}: the marker of a completed effect is ${String(marker.status)}: released after the effect (issue 12 item 2)`,
        );
      }
    }

    if (mode === 'two-phase' && keyDuplicates > 0) {
      violate(
        `${pk}: ${keyDuplicates} execution(s) of an effect without a takeover or a lost answer to explain them`,
      );
    }
    duplicateEffects += keyDuplicates;
    if (epochs.includes(1) && !expiry && !group.some((plan) => plan.expiryMidEffect))
      violate(`${pk}: an effect in epoch 1 without an expiry redelivery`);
    if (epochs.length === 2 && keyDuplicates === 0) reprocessedAfterExpiry += 1;

    const winner = group.find((plan) => plan.fingerprint === storedFingerprint);
    if (storedFingerprint !== undefined && winner === undefined) {
      violate(`${pk}: the stored fingerprint matches no planned payload`);
    }
    for (const plan of group) {
      if (plan !== winner && plan.copies.every(behindGroup)) {
        deadLettered += 1;
        deadLetteredBehindGroup += 1;
        continue;
      }
      if (plan === winner) {
        expectAcknowledged(plan);
        const gap = mode === 'marker' && missing !== undefined ? result.markerGaps.get(pk) : undefined;
        if (gap !== undefined) {
          atMostOnceGaps[gap] = (atMostOnceGaps[gap] ?? 0) + 1;
        } else if (missing !== undefined) {
          violate(`m${plan.index} (${pk}): ${missing}`);
          lost += 1;
        } else if (amount !== plan.amount) {
          violate(`m${plan.index} (${pk}): amount ${String(amount)}, expected ${plan.amount}`);
        }
      } else if (winner !== undefined) {
        if (!expectDeadLettered(plan, 'PAYLOAD_MISMATCH')) lost += 1;
      } else {
        violate(`m${plan.index} (${pk}): never processed (no record)`);
        lost += 1;
      }
    }
  }

  const perPlan = new Map<number, number>();
  for (const delivery of result.deliveries)
    perPlan.set(delivery.planIndex, (perPlan.get(delivery.planIndex) ?? 0) + 1);
  const concurrent = countConcurrent(result);
  let duplicateDeliveries = 0;
  let deliveredTwice = 0;
  for (const count of perPlan.values()) {
    duplicateDeliveries += count - 1;
    if (count >= 2) deliveredTwice += 1;
  }
  const crashes = Object.values(result.crashes).reduce((sum, n) => sum + n, 0);
  const history = checkRunHistory(options.seed, result.history, violate);

  return {
    seed: options.seed,
    mode,
    queue: options.queue ?? 'standard',
    deadLetter: options.deadLetter,
    completedCacheEntries: options.completedCacheEntries,
    atomicCommit: options.atomicCommit,
    cacheHits: result.cacheHits,
    coldRestarts: result.coldRestarts,
    messages: plans.length,
    deliveries: result.deliveries.length,
    duplicateDeliveries,
    crashes,
    crashesByPoint: result.crashes,
    duplicateEffects,
    lost,
    deliveredTwice,
    deliveredConcurrently: [...concurrent.values()].filter(Boolean).length,
    reprocessedAfterExpiry,
    atMostOnceGaps,
    reexecutionsDeduplicated,
    takeovers: [...result.downstream.takeovers.values()].reduce((sum, list) => sum + list.length, 0),
    rivalsAfterLeaseEnded: result.rivalsAfterLeaseEnded.length,
    deadLettered,
    injected: result.injected,
    throttles: result.throttles,
    racingConflicts: result.racingConflicts,
    throttledRequests: result.throttledRequests,
    invocations: result.invocations,
    virtualSeconds: Math.round(result.virtualMillis / 1000),
    history,
    ...(result.fifo === undefined ? {} : { fifo: { ...result.fifo, deadLetteredBehindGroup } }),
    violations,
    ...(result.trace === undefined
      ? {}
      : {
          traces: tracesOf(
            result.trace,
            [...violations, ...result.rivalsAfterLeaseEnded, ...bigKeyGaps],
            plans,
          ),
        }),
  };
}

/**
 * The traces of the record keys that violations (or other texts: keys to explain) name: a key, a
 * message key's effect keys, or the keys of a message named by its index (`m2217: ...`).
 */
function tracesOf(
  trace: ReadonlyMap<string, readonly string[]>,
  violations: readonly string[],
  plans: readonly PlannedMessage[],
): Record<string, readonly string[]> {
  const named = new Set(
    violations.flatMap((violation) => violation.match(/[\w.:-]+(?:\/\w+)?#k?\d+/g) ?? []),
  );
  for (const violation of violations) {
    const index = /^m(\d+)\b/.exec(violation)?.[1];
    // By index, not position: a FIFO seed's plans leave out the messages the queue deduplicated.
    const plan =
      index === undefined ? undefined : plans.find((candidate) => candidate.index === Number(index));
    for (const key of plan?.effectKeys ?? []) named.add(key);
  }
  const traces: Record<string, readonly string[]> = {};
  for (const [pk, events] of trace) {
    const messageKey = pk.replace(/\/\w+#/, '#');
    if (named.has(pk) || named.has(messageKey)) traces[pk] = events;
  }
  return traces;
}
