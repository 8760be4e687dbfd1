/**
 * Batch commit for atomic mode: the commits of the messages an invocation runs side by side go
 * to DynamoDB together, in as few `TransactWriteItems` as the limits allow, instead of one
 * transaction per message. A batch of ten messages with one business write each is then one
 * 20-action transaction, not ten 2-action ones: one request, and one transaction's latency
 * rather than the slowest of ten.
 *
 * When the messages commit: once every message of the invocation that has started describing
 * its writes has either queued its commit or finished without one (a handler that throws, a
 * commit of a single write, which goes alone as one `PutItem`), on the next turn of the event
 * loop; a commit waits at most {@link ROUND_WAIT_MILLIS} for messages still describing theirs,
 * which then commit in a later round. Messages the engine starts later (the next message of a
 * FIFO group, of a dedup key, or past the concurrency) queue for the next round.
 *
 * How a round is packed: in batch order, a message joins the first transaction with room for
 * its actions (at most 100) and bytes (at most 4 MB); a message that would write an item an
 * earlier message of the round writes (no two actions of a transaction may touch one item, and
 * two transactions touching it at once conflict) waits for the next round. Items are told apart
 * by their `Key`, and a put's item by the key attributes other writes name for its table (or the
 * marked put's key attribute): two puts of one item on a table nothing else names are not seen,
 * and DynamoDB refuses that transaction (`ValidationException`), which commits its messages one
 * at a time instead.
 *
 * When a shared transaction is cancelled: each message's share of the cancellation reasons is
 * read as its own commit's would be (a duplicate, a mismatch, a stale version, a business
 * condition, a conflict or throttling: the same outcome as a commit of its own), and the
 * messages none of whose actions caused it are sent again together. After two cancelled rounds,
 * the messages still left commit one at a time, so a round trip or two is the most a bad
 * message costs the others. A failure of a whole shared request other than a refusal of its
 * shape (throttling after the SDK's retries, access denied) is every member's failure, as it
 * would have been each message's.
 *
 * A lost response is safe as before: the SDK sends the same request again with the same
 * `ClientRequestToken`, which DynamoDB answers without applying it twice; a retry that arrives
 * later meets every message's marker and reads each as a duplicate.
 */

import { EffectivelyOnceError, isEffectivelyOnceError } from '../core/errors';
import { MAX_TRANSACTION_ACTIONS, MAX_TRANSACTION_BYTES } from '../core/item-size';
import type {
  AtomicCommit,
  AtomicStore,
  CommitResult,
  SharedCommitResult,
  TransactWriteAction,
} from '../core/store-port';

/** One message's commit, waiting for its round. */
export interface QueuedCommit {
  /** What the message commits. */
  readonly commit: AtomicCommit;
  /** Its actions in a transaction (the marker's included). */
  readonly actions: number;
  /** Its estimated bytes in a transaction. */
  readonly bytes: number;
  /** When the message started, epoch milliseconds. */
  readonly nowMillis: number;
  /** Commits it by itself, as `commit: 'message'` does. */
  readonly alone: () => Promise<CommitResult>;
}

/** A message's place in the batch: it describes its writes, then commits or leaves. */
export interface CommitTicket {
  /** Queues the commit for the next round and resolves with its result. Leaves the describing set. */
  commit(queued: QueuedCommit): Promise<CommitResult>;
  /** The message finished without a shared commit (idempotent; a no-op after `commit`). */
  leave(): void;
}

/** The commits of one invocation's batch. */
export interface CommitRounds {
  /** A message starts describing its writes: the next round waits for it to commit or leave. */
  enter(): CommitTicket;
}

/** Cancelled shared transactions after which the messages left commit one at a time. */
const MAX_CANCELLED_ROUNDS = 2;

/**
 * The longest a queued commit waits for messages still describing their writes, milliseconds.
 * A handler that awaits something slow (or never returns) then holds the others back this long
 * at most: they commit without it, and it commits in a later round. Without the bound, a handler
 * hanging until the Lambda timeout would leave every message of the batch uncommitted, so the
 * whole batch would come back again and again, until the innocent messages reached the
 * dead-letter queue with it.
 */
export const ROUND_WAIT_MILLIS = 100;

interface Waiting {
  readonly queued: QueuedCommit;
  readonly resolve: (result: CommitResult) => void;
  readonly reject: (error: unknown) => void;
}

/** Creates the rounds of one invocation over a store that can commit several messages at once. */
export function createCommitRounds(store: Required<Pick<AtomicStore, 'commitMany'>>): CommitRounds {
  let describing = 0;
  let queue: Waiting[] = [];
  let scheduled = false;
  /** Ends the wait for messages still describing: set while commits wait for them. */
  let waitLimit: ReturnType<typeof setTimeout> | undefined;

  /** Commits what is queued, as one round. */
  const flush = (): void => {
    clearTimeout(waitLimit);
    waitLimit = undefined;
    if (queue.length === 0) return;
    const round = queue;
    queue = [];
    // A failure of the rounds themselves (a store answering out of contract) is every unsettled
    // member's, never a batch left waiting until the Lambda timeout.
    commitRounds(store, round).catch((error: unknown) => {
      for (const member of round) member.reject(error);
    });
  };

  const maybeFlush = (): void => {
    if (queue.length === 0) return;
    if (describing > 0) {
      // Wait for the messages still describing their writes, but not for longer than the limit.
      waitLimit ??= setTimeout(flush, ROUND_WAIT_MILLIS);
      return;
    }
    if (scheduled) return;
    scheduled = true;
    // One turn later, so messages the engine starts as others finish can join this round.
    setImmediate(() => {
      scheduled = false;
      if (describing > 0) maybeFlush();
      else flush();
    });
  };

  return {
    enter() {
      describing += 1;
      let inside = true;
      const leave = () => {
        if (!inside) return;
        inside = false;
        describing -= 1;
        maybeFlush();
      };
      return {
        commit(queued) {
          const result = new Promise<CommitResult>((resolve, reject) =>
            queue.push({ queued, resolve, reject }),
          );
          leave();
          return result;
        },
        leave,
      };
    },
  };
}

/** Commits `waiting` in shared transactions, round after round, settling every one. */
async function commitRounds(
  store: Required<Pick<AtomicStore, 'commitMany'>>,
  waiting: Waiting[],
): Promise<void> {
  const position = new Map(waiting.map((member, index) => [member, index]));
  let round = waiting;
  let cancelledRounds = 0;
  while (round.length > 0) {
    if (round.length === 1 || cancelledRounds >= MAX_CANCELLED_ROUNDS) {
      await Promise.all(round.map(commitAlone));
      return;
    }
    const { transactions, deferred } = pack(round);
    const again: Waiting[] = [];
    let cancelled = false;
    await Promise.all(
      transactions.map(async (members) => {
        if (members.length === 1) return commitAlone(members[0]!);
        const nowMillis = Math.max(...members.map((member) => member.queued.nowMillis));
        let results: readonly SharedCommitResult[];
        try {
          results = await store.commitMany(
            members.map((member) => member.queued.commit),
            nowMillis,
          );
          if (!Array.isArray(results) || results.length !== members.length) {
            throw new EffectivelyOnceError(
              'UNEXPECTED',
              `commitMany answered ${Array.isArray(results) ? results.length : 'no'} results for ${members.length} commits`,
            );
          }
        } catch (error) {
          // DynamoDB refused the transaction's shape (two actions on one item the packing
          // could not see): the messages commit one at a time. Any other failure is theirs.
          if (isEffectivelyOnceError(error) && error.code === 'VALIDATION') {
            await Promise.all(members.map(commitAlone));
          } else {
            for (const member of members) member.reject(error);
          }
          return;
        }
        const notApplied: Waiting[] = [];
        results.forEach((result, index) => {
          const member = members[index]!;
          if (result.kind === 'not-applied') notApplied.push(member);
          else if (result.kind === 'failed') member.reject(result.error);
          else member.resolve(result);
        });
        if (notApplied.length === 0) return;
        cancelled = true;
        // A cancellation no member explains (no reasons sent): each commits alone.
        if (notApplied.length === members.length) await Promise.all(notApplied.map(commitAlone));
        else again.push(...notApplied);
      }),
    );
    if (cancelled) cancelledRounds += 1;
    // Batch order again: the deferred ones came after some of those sent again.
    round = [...again, ...deferred].sort((a, b) => position.get(a)! - position.get(b)!);
  }
}

async function commitAlone(member: Waiting): Promise<void> {
  try {
    member.resolve(await member.queued.alone());
  } catch (error) {
    member.reject(error);
  }
}

/**
 * Packs a round into transactions within the limits, in batch order; a message that touches an
 * item an earlier message of the round touches is deferred to the next round.
 */
function pack(round: readonly Waiting[]): {
  transactions: Waiting[][];
  deferred: Waiting[];
} {
  const keyNames = keyNamesByTable(round);
  const touched = new Set<string>();
  const transactions: { members: Waiting[]; actions: number; bytes: number }[] = [];
  const deferred: Waiting[] = [];
  for (const member of round) {
    const items = itemsOf(member.queued.commit, keyNames);
    if (items.some((item) => touched.has(item))) {
      deferred.push(member);
      continue;
    }
    for (const item of items) touched.add(item);
    const { actions, bytes } = member.queued;
    let transaction = transactions.find(
      (candidate) =>
        candidate.actions + actions <= MAX_TRANSACTION_ACTIONS &&
        candidate.bytes + bytes <= MAX_TRANSACTION_BYTES,
    );
    if (!transaction) {
      transaction = { members: [], actions: 0, bytes: 0 };
      transactions.push(transaction);
    }
    transaction.members.push(member);
    transaction.actions += actions;
    transaction.bytes += bytes;
  }
  return { transactions: transactions.map((transaction) => transaction.members), deferred };
}

/** The body of one business write, whichever kind it is. */
function bodyOf(write: TransactWriteAction): {
  readonly TableName?: string;
  readonly Key?: Record<string, unknown>;
  readonly Item?: Record<string, unknown>;
} {
  return (write.Put ?? write.Update ?? write.Delete ?? write.ConditionCheck ?? {}) as never;
}

/** The key attribute names each table's writes name in the round (a `Key`, a marked put's key attribute). */
function keyNamesByTable(round: readonly Waiting[]): Map<string, string[][]> {
  const names = new Map<string, string[][]>();
  const add = (table: string, attributes: string[]) => {
    const known = names.get(table) ?? [];
    if (!known.some((entry) => entry.join('\0') === attributes.join('\0'))) known.push(attributes);
    names.set(table, known);
  };
  for (const { queued } of round) {
    const { writes, marker } = queued.commit;
    for (const write of writes) {
      const { TableName, Key } = bodyOf(write);
      if (TableName !== undefined && Key !== undefined) add(TableName, Object.keys(Key).sort());
    }
    const marked = marker && bodyOf(writes[marker.index] ?? {});
    if (marker && marked?.TableName !== undefined) add(marked.TableName, [marker.keyAttribute]);
  }
  return names;
}

/**
 * The items a commit's business writes touch, as far as the round can tell them apart: a key
 * names its item; a put's item is named by each set of key attributes known for its table that
 * the item holds (a partition key alone may name more than the item: then the messages are only
 * kept apart without need).
 */
function itemsOf(commit: AtomicCommit, keyNames: ReadonlyMap<string, string[][]>): string[] {
  const items: string[] = [];
  for (const write of commit.writes) {
    const { TableName, Key, Item } = bodyOf(write);
    if (TableName === undefined) continue;
    if (Key !== undefined) items.push(identity(TableName, Key, Object.keys(Key).sort()));
    else if (Item !== undefined) {
      for (const attributes of keyNames.get(TableName) ?? []) {
        if (attributes.every((name) => Item[name] !== undefined))
          items.push(identity(TableName, Item, attributes));
      }
    }
  }
  return items;
}

function identity(table: string, source: Record<string, unknown>, attributes: readonly string[]): string {
  const values = attributes.map((name) => `${name}=${typeof source[name]}:${String(source[name])}`);
  return [table, ...values].join('\0');
}
