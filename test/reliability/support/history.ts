/**
 * The history of one simulated run, and the checks every run's history must pass.
 *
 * A simulation appends what it observed, in the order it observed it (the logical time `t` of an
 * entry is its position): each logical message the producer meant to send once (`input`), each
 * delivery of it (`delivered`), each effect DynamoDB (or the downstream service) answered as
 * applied, in commit order (`applied`: its record key, payload amount, live window and, on an
 * ordered source, its group and sequence number), each dead letter with its code and reason
 * (`dead-lettered`), each record the event source gave up on (`discarded`: its order is lost by
 * design), each effect missing by design (`excused`: marker mode's at-most-once gap), and, across
 * a chain, each event the upstream service committed to its outbox (`emitted`).
 *
 * The checks are pure functions of the entries; each returns the first violation it finds, with
 * only the entries of the offending key or group that show it:
 *
 * - {@link exactlyOnce}: per scoped key, each effect after the first opens a later live window
 *   (an effect whose record expired by design runs again, once);
 * - {@link inputEqualsOutput}: every input is applied with its payload under each of its keys,
 *   dead-lettered with a reason, or excused; and nothing is applied that no input asked for;
 * - {@link orderPerGroup}: per group (a FIFO message group, a stream's partition key), the
 *   effects land in the order the source sequenced their records, but for records the event
 *   source discarded;
 * - {@link chainOnce}: each event the upstream service emitted is applied once downstream, or
 *   dead-lettered with a reason; nothing is applied downstream that upstream did not emit.
 *
 * {@link checkHistory} runs them all and reports the earliest violation; {@link describeViolation}
 * names the check, the seed, the key or group and the minimal history.
 */

/** One thing a simulation observed. */
export type HistoryEvent =
  | {
      readonly kind: 'input';
      /** The logical message (`m12`, a stream record's plan index). */
      readonly message: string;
      /** The record keys its effects land under; empty for input that cannot be keyed (poison). */
      readonly keys: readonly string[];
      readonly amount?: number;
    }
  /** Keys the consumer made of a message at run time (an id it keys only when it sees it). */
  | { readonly kind: 'keyed'; readonly message: string; readonly keys: readonly string[] }
  | { readonly kind: 'delivered'; readonly message: string; readonly attempt: string }
  | {
      readonly kind: 'applied';
      readonly key: string;
      readonly amount?: number;
      /** The live window it ran in (a record expired by design opens the next). @default 0 */
      readonly window?: number;
      /** The ordered group it belongs to, and its record's sequence number in its source. */
      readonly group?: string;
      readonly sequence?: string;
      /** The message whose delivery applied it, where the simulation knows it. */
      readonly message?: string;
      /** Downstream of a chain: the upstream event it applies. */
      readonly upstream?: string;
    }
  | {
      readonly kind: 'dead-lettered';
      readonly message: string;
      readonly code: string;
      readonly reason: string;
    }
  | { readonly kind: 'discarded'; readonly message: string; readonly why: string }
  | { readonly kind: 'excused'; readonly key: string; readonly why: string }
  | { readonly kind: 'emitted'; readonly event: string; readonly message?: string };

/** An event at its logical time. */
export interface HistoryEntry {
  readonly t: number;
  readonly event: HistoryEvent;
}

/** An append-only history with logical time. */
export interface History {
  append(event: HistoryEvent): void;
  readonly entries: readonly HistoryEntry[];
}

/** A fresh, empty history. */
export function createHistory(): History {
  const entries: HistoryEntry[] = [];
  return {
    append(event) {
      entries.push({ t: entries.length, event });
    },
    entries,
  };
}

export type HistoryCheck = 'exactlyOnce' | 'inputEqualsOutput' | 'orderPerGroup' | 'chainOnce';

/** The first thing a check found wrong, and the entries that show it. */
export interface HistoryViolation {
  readonly check: HistoryCheck;
  /** The key, message, group or event it is about. */
  readonly subject: string;
  readonly summary: string;
  /** The logical time of the entry that breaks the check (something never output: the end of the run). */
  readonly at: number;
  readonly history: readonly HistoryEntry[];
}

/** What the checks covered, and the earliest violation. */
export interface HistorySummary {
  readonly entries: number;
  /** Keys whose effects were checked for exactly once. */
  readonly keys: number;
  /** Groups whose order was checked. */
  readonly groups: number;
  /** First effects of a key whose place in their group's order was checked. */
  readonly ordered: number;
  /** Upstream events followed downstream. */
  readonly events: number;
  readonly violation?: HistoryViolation;
}

const appliedOf = (entries: readonly HistoryEntry[]) =>
  entries.flatMap((entry) =>
    entry.event.kind === 'applied' ? [{ entry, event: entry.event } as const] : [],
  );

/** Per key, each effect after the first opens a strictly later live window. */
export function exactlyOnce(entries: readonly HistoryEntry[]): HistoryViolation | undefined {
  const last = new Map<string, { entry: HistoryEntry; window: number }>();
  for (const { entry, event } of appliedOf(entries)) {
    const window = event.window ?? 0;
    const previous = last.get(event.key);
    if (previous !== undefined && window <= previous.window) {
      return {
        check: 'exactlyOnce',
        subject: event.key,
        summary: `${event.key} applied again in live window ${window} after an effect in window ${previous.window}`,
        at: entry.t,
        history: [previous.entry, entry],
      };
    }
    last.set(event.key, { entry, window });
  }
  return undefined;
}

const hasReason = (event: HistoryEvent): boolean =>
  event.kind === 'dead-lettered' && event.reason.trim() !== '' && event.code.trim() !== '';

/**
 * Every input is output: applied with its amount under each of its keys (or excused there), or
 * dead-lettered with a code and a reason; and every effect applied (not downstream of a chain)
 * belongs to an input with its key and amount.
 */
export function inputEqualsOutput(entries: readonly HistoryEntry[]): HistoryViolation | undefined {
  const keysOf = new Map<string, Set<string>>();
  const inputs: { entry: HistoryEntry; message: string; amount?: number }[] = [];
  /** Per key, the amounts applied (`undefined` for an effect that carries none), or excused. */
  const outputs = new Map<string, { excused: boolean; amounts: Set<number | undefined> }>();
  const outputOf = (key: string) => {
    const output = outputs.get(key) ?? { excused: false, amounts: new Set<number | undefined>() };
    outputs.set(key, output);
    return output;
  };
  const deadLettered = new Set<string>();
  for (const entry of entries) {
    const { event } = entry;
    if (event.kind === 'input' || event.kind === 'keyed') {
      const keys = keysOf.get(event.message) ?? new Set<string>();
      for (const key of event.keys) keys.add(key);
      keysOf.set(event.message, keys);
      if (event.kind === 'input') {
        inputs.push({
          entry,
          message: event.message,
          ...(event.amount === undefined ? {} : { amount: event.amount }),
        });
      }
    } else if (event.kind === 'applied' && event.upstream === undefined) {
      outputOf(event.key).amounts.add(event.amount);
    } else if (event.kind === 'excused') {
      outputOf(event.key).excused = true;
    } else if (event.kind === 'dead-lettered' && hasReason(event)) {
      deadLettered.add(event.message);
    }
  }
  const applies = (key: string, amount: number | undefined): boolean => {
    const output = outputs.get(key);
    if (output === undefined) return false;
    if (output.excused || output.amounts.has(amount) || output.amounts.has(undefined)) return true;
    return amount === undefined && output.amounts.size > 0;
  };

  let first: HistoryViolation | undefined;
  for (const input of inputs) {
    if (deadLettered.has(input.message)) continue;
    const keys = [...(keysOf.get(input.message) ?? [])];
    const unapplied = keys.filter((key) => !applies(key, input.amount));
    if (keys.length > 0 && unapplied.length === 0) continue;
    // The input, its last delivery, its dead letters without a reason, what its keys got.
    const own = entries.filter((entry) => 'message' in entry.event && entry.event.message === input.message);
    const keyEntries = entries.filter(
      (entry) =>
        (entry.event.kind === 'applied' || entry.event.kind === 'excused') &&
        (entry.event.kind === 'excused' || entry.event.upstream === undefined) &&
        keys.includes(entry.event.key),
    );
    first = {
      check: 'inputEqualsOutput',
      subject: input.message,
      summary:
        keys.length === 0
          ? `${input.message} has no key and was never dead-lettered with a reason`
          : `${input.message} neither applied${input.amount === undefined ? '' : ` with amount ${input.amount}`} under ${unapplied.join(', ')} nor dead-lettered with a reason`,
      // Known only once the run ended: after any effect applied twice or out of order.
      at: entries.length,
      history: [
        ...own.filter((entry) => entry.event.kind === 'input'),
        ...own.filter((entry) => entry.event.kind === 'delivered').slice(-1),
        ...own.filter((entry) => entry.event.kind === 'dead-lettered'),
        ...keyEntries,
      ].sort((a, b) => a.t - b.t),
    };
    break;
  }

  const inputsOfKey = new Map<string, Set<number | undefined>>();
  for (const input of inputs) {
    for (const key of keysOf.get(input.message) ?? []) {
      const amounts = inputsOfKey.get(key) ?? new Set<number | undefined>();
      amounts.add(input.amount);
      inputsOfKey.set(key, amounts);
    }
  }
  for (const entry of entries) {
    const { event } = entry;
    if (event.kind !== 'applied' || event.upstream !== undefined) continue;
    const amounts = inputsOfKey.get(event.key);
    const asked =
      amounts !== undefined &&
      (amounts.has(event.amount) ||
        amounts.has(undefined) ||
        (event.amount === undefined && amounts.size > 0));
    if (asked) continue;
    // An effect nobody asked for shows itself at once: earlier than anything never output.
    return {
      check: 'inputEqualsOutput',
      subject: event.key,
      summary: `${event.key} applied${event.amount === undefined ? '' : ` with amount ${event.amount}`}, which no input asked for`,
      at: entry.t,
      history: [entry],
    };
  }
  return first;
}

/** Orders sequence numbers as decimal integers of any length (Kinesis's exceed 2^53). */
function compareSequence(a: string, b: string): number {
  return a.length === b.length ? (a < b ? -1 : a > b ? 1 : 0) : a.length - b.length;
}

/**
 * The first effect of each key with a group and a sequence number, but for records the event
 * source discarded (their order lost by design): the effects `orderPerGroup` checks.
 */
function orderedEffects(entries: readonly HistoryEntry[]) {
  const discarded = new Set(
    entries.flatMap((entry) => (entry.event.kind === 'discarded' ? [entry.event.message] : [])),
  );
  const seen = new Set<string>();
  return appliedOf(entries).filter(({ event }) => {
    if (event.group === undefined || event.sequence === undefined || seen.has(event.key)) return false;
    seen.add(event.key);
    return event.message === undefined || !discarded.has(event.message);
  });
}

/**
 * Per group, the first effect of each key lands in the order the source sequenced the records
 * that applied them; a record the event source discarded (its order lost by design) is left out.
 *
 * On a FIFO queue the group is the message group and the sequence the `SequenceNumber` of the
 * record whose delivery applied the effect, which is all AWS lets reorder:
 * - a message dead-lettered (by the handler with a reason, or by the redrive policy after
 *   `maxReceiveCount` receives) lets its group's later messages pass; it applies nothing then,
 *   and if it comes back (a redrive) it comes back as a new message with a later sequence number;
 * - a producer copy sent again after the 5-minute deduplication interval is a new message with a
 *   later sequence number; its effect is a duplicate (not a first effect: not checked), unless
 *   the first copy applied nothing, when it applies in its own, later place;
 * - effects after a key's first (an expired record's next live window, a redriven completed
 *   message) are `exactlyOnce`'s, not this check's.
 */
export function orderPerGroup(entries: readonly HistoryEntry[]): HistoryViolation | undefined {
  const highest = new Map<string, { entry: HistoryEntry; sequence: string }>();
  for (const { entry, event } of orderedEffects(entries)) {
    if (event.group === undefined || event.sequence === undefined) continue;
    const previous = highest.get(event.group);
    if (previous !== undefined && compareSequence(event.sequence, previous.sequence) < 0) {
      return {
        check: 'orderPerGroup',
        subject: event.group,
        summary: `group ${event.group}: ${event.key} (sequence ${event.sequence}) applied after ${(previous.entry.event as { key: string }).key} (sequence ${previous.sequence})`,
        at: entry.t,
        history: [previous.entry, entry],
      };
    }
    highest.set(event.group, { entry, sequence: event.sequence });
  }
  return undefined;
}

/**
 * Each event the upstream service emitted is applied exactly once downstream, or never and
 * dead-lettered with a reason; nothing is applied downstream that was not emitted.
 */
export function chainOnce(entries: readonly HistoryEntry[]): HistoryViolation | undefined {
  const emitted = new Map<string, HistoryEntry>();
  const downstream = new Map<string, HistoryEntry[]>();
  const about = new Map<string, HistoryEntry[]>();
  let first: HistoryViolation | undefined;
  const found = (violation: HistoryViolation) => {
    if (first === undefined || violation.at < first.at) first = violation;
  };
  for (const entry of entries) {
    const { event } = entry;
    if (event.kind === 'emitted' && !emitted.has(event.event)) emitted.set(event.event, entry);
    if (event.kind === 'applied' && event.upstream !== undefined) {
      const list = downstream.get(event.upstream) ?? [];
      list.push(entry);
      downstream.set(event.upstream, list);
      if (!emitted.has(event.upstream)) {
        found({
          check: 'chainOnce',
          subject: event.upstream,
          summary: `${event.key} applied downstream for ${event.upstream}, which upstream never emitted`,
          at: entry.t,
          history: [entry],
        });
      }
    }
    if ((event.kind === 'dead-lettered' || event.kind === 'delivered') && event.message !== undefined) {
      const list = about.get(event.message) ?? [];
      list.push(entry);
      about.set(event.message, list);
    }
  }
  for (const [id, entry] of emitted) {
    const applied = downstream.get(id) ?? [];
    if (applied.length === 1) continue;
    const related = about.get(id) ?? [];
    if (applied.length === 0 && related.some((other) => hasReason(other.event))) continue;
    if (applied.length === 0) {
      found({
        check: 'chainOnce',
        subject: id,
        summary: `${id} emitted upstream, never applied downstream nor dead-lettered with a reason`,
        at: entries.length,
        history: [entry, ...related.slice(-2)],
      });
      continue;
    }
    const second = applied[1]!;
    found({
      check: 'chainOnce',
      subject: id,
      summary: `${id} emitted once upstream, applied ${applied.length} times downstream`,
      at: second.t,
      // The emission, what carried it downstream up to the second effect, and the two effects.
      history: [entry, ...related.filter((other) => other.t < second.t).slice(-3), applied[0]!, second].sort(
        (a, b) => a.t - b.t,
      ),
    });
  }
  return first;
}

const CHECKS: Readonly<
  Record<HistoryCheck, (entries: readonly HistoryEntry[]) => HistoryViolation | undefined>
> = { exactlyOnce, inputEqualsOutput, orderPerGroup, chainOnce };

/** Runs every check and reports what they covered and the earliest violation. */
export function checkHistory(entries: readonly HistoryEntry[]): HistorySummary {
  let violation: HistoryViolation | undefined;
  for (const check of Object.values(CHECKS)) {
    const found = check(entries);
    if (found !== undefined && (violation === undefined || found.at < violation.at)) violation = found;
  }
  const applied = appliedOf(entries);
  return {
    entries: entries.length,
    keys: new Set(applied.map(({ event }) => event.key)).size,
    groups: new Set(applied.flatMap(({ event }) => (event.group === undefined ? [] : [event.group]))).size,
    ordered: orderedEffects(entries).length,
    events: entries.filter((entry) => entry.event.kind === 'emitted').length,
    ...(violation === undefined ? {} : { violation }),
  };
}

/** One entry as a line: `t12 applied rel-s1-atomic#k3 amount 5 window 0 (m3)`. */
export function formatEntry({ t, event }: HistoryEntry): string {
  const parts: string[] = [`t${t}`, event.kind];
  switch (event.kind) {
    case 'input':
      parts.push(event.message, event.keys.length === 0 ? 'no key' : `keys ${event.keys.join(', ')}`);
      if (event.amount !== undefined) parts.push(`amount ${event.amount}`);
      break;
    case 'keyed':
      parts.push(event.message, `as ${event.keys.join(', ')}`);
      break;
    case 'delivered':
      parts.push(event.message, event.attempt);
      break;
    case 'applied':
      parts.push(event.key);
      if (event.amount !== undefined) parts.push(`amount ${event.amount}`);
      parts.push(`window ${event.window ?? 0}`);
      if (event.group !== undefined) parts.push(`group ${event.group} sequence ${event.sequence}`);
      if (event.upstream !== undefined) parts.push(`for ${event.upstream}`);
      if (event.message !== undefined) parts.push(`(${event.message})`);
      break;
    case 'dead-lettered':
      parts.push(event.message, event.code || 'no code', event.reason ? `"${event.reason}"` : 'no reason');
      break;
    case 'discarded':
      parts.push(event.message, event.why);
      break;
    case 'excused':
      parts.push(event.key, event.why);
      break;
    case 'emitted':
      parts.push(event.event);
      if (event.message !== undefined) parts.push(`(${event.message})`);
      break;
  }
  return parts.join(' ');
}

/** The violation as a message: the check, the seed, the subject and the minimal history. */
export function describeViolation(seed: number, violation: HistoryViolation): string {
  return [
    `history check ${violation.check} failed at seed ${seed} (${violation.subject}): ${violation.summary}`,
    ...violation.history.map((entry) => `  ${formatEntry(entry)}`),
  ].join('\n');
}

/** Throws the earliest violation of `entries` as an error (see {@link describeViolation}). */
export function assertHistory(seed: number, entries: readonly HistoryEntry[]): HistorySummary {
  const summary = checkHistory(entries);
  if (summary.violation !== undefined) throw new Error(describeViolation(seed, summary.violation));
  return summary;
}

/** What a seed's report says of its history: what was checked, and how many checks failed (0 or 1: the first). */
export interface HistoryCoverage {
  readonly keys: number;
  readonly groups: number;
  /** First effects whose place in their group's order was checked. */
  readonly ordered: number;
  readonly events: number;
  readonly violations: number;
}

/**
 * Checks a run's history for an oracle: the earliest violation goes to `violate` as
 * {@link describeViolation} words it; returns what was checked.
 */
export function checkRunHistory(
  seed: number,
  entries: readonly HistoryEntry[],
  violate: (message: string) => void,
): HistoryCoverage {
  const { keys, groups, ordered, events, violation } = checkHistory(entries);
  if (violation !== undefined) violate(describeViolation(seed, violation));
  return { keys, groups, ordered, events, violations: violation === undefined ? 0 : 1 };
}
