/**
 * The `InboxStore` contract: one suite that runs against every implementation of the port
 * (the DynamoDB store on the local emulator, the same store over the benchmark's DynamoDB stub,
 * the in-memory fake used by unit tests), so the fake cannot drift from what the database
 * really does.
 *
 * Business writes in this suite use a small, fixed subset of DynamoDB expressions, so a
 * fake only needs to understand these:
 *
 * - `Put` without a condition;
 * - `Put` with `ConditionExpression: 'attribute_not_exists(pk)'`;
 * - `ConditionCheck` with `Key: { pk }` and `ConditionExpression: 'attribute_exists(pk)'`;
 * - the version-guarded `Put` the store itself builds (`putIfNewer`);
 * - `Put` with `ConditionExpression: 'attribute_exists(pk)'` or `'attribute_not_exists(pk)'` as
 *   the marked put of `commitWithItemMarker` (the store joins it with the marker's condition).
 *
 * Business tables have the partition key `pk` (String). Every test uses fresh keys, so one
 * fixture serves the whole suite. The clock is injected: `now` is fixed when the suite is
 * defined and tests move it explicitly.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENTITY_FINGERPRINT_ATTRIBUTE } from '../../lambda/core/contract';
import type {
  AtomicCommit,
  InboxRecord,
  InboxStore,
  TransactWriteAction,
} from '../../lambda/core/store-port';
import { epochSeconds } from '../../lambda/core/time';

/** What a contract run needs from an implementation. */
export interface InboxStoreFixture {
  /** The store under test. */
  readonly store: InboxStore;
  /** A business table (partition key `pk`, String) that commits and entity inserts write to. */
  readonly businessTable: string;
  /** Reads a business item by `pk`, strongly consistent; `undefined` when absent. */
  readItem(tableName: string, pk: string): Promise<Record<string, unknown> | undefined>;
  /** Releases what the fixture created; called once after the suite. */
  dispose?(): Promise<void>;
}

/**
 * Defines the contract suite for one `InboxStore` implementation.
 *
 * @param name - the implementation, shown in test names.
 * @param factory - builds the fixture once, before the suite.
 * @example
 * describeInboxStoreContract('in-memory fake', () => {
 *   const fake = createMemoryStore();
 *   return { store: fake, businessTable: 'business', readItem: (table, pk) => fake.read(table, pk) };
 * });
 */
export function describeInboxStoreContract(
  name: string,
  factory: () => InboxStoreFixture | Promise<InboxStoreFixture>,
): void {
  describe(`InboxStore contract: ${name}`, () => {
    let fixture: InboxStoreFixture;
    let store: InboxStore;
    let business: string;
    const read = (pk: string) => fixture.readItem(business, pk);

    const now = Date.now();
    const nowSeconds = epochSeconds(now);
    const hour = 3600;

    const key = (label: string) => `contract#${label}#${randomUUID()}`;
    const marker = (pk: string, overrides: Partial<InboxRecord> = {}): InboxRecord => ({
      pk,
      status: 'COMPLETED',
      fingerprint: 'fp-1',
      expiresAt: nowSeconds + hour,
      consumer: 'orders',
      committedAt: now,
      ...overrides,
    });
    const claim = (pk: string, owner: string, leaseExpiresAt: number, overrides: Partial<InboxRecord> = {}) =>
      marker(pk, { status: 'IN_PROGRESS', owner, leaseExpiresAt, ...overrides });
    const put = (pk: string, item: Record<string, unknown> = {}): TransactWriteAction => ({
      Put: { TableName: business, Item: { pk, ...item } },
    });
    const putIfAbsent = (pk: string, item: Record<string, unknown> = {}): TransactWriteAction => ({
      Put: { TableName: business, Item: { pk, ...item }, ConditionExpression: 'attribute_not_exists(pk)' },
    });
    const requireExists = (pk: string): TransactWriteAction => ({
      ConditionCheck: { TableName: business, Key: { pk }, ConditionExpression: 'attribute_exists(pk)' },
    });

    beforeAll(async () => {
      fixture = await factory();
      store = fixture.store;
      business = fixture.businessTable;
    });

    afterAll(async () => {
      await fixture?.dispose?.();
    });

    describe('insert', () => {
      it('inserts a new record, then returns exactly that record for a duplicate insert', async () => {
        const pk = key('insert');
        const first = marker(pk, { result: { invoice: 'inv-1', lines: [1, 'two', { three: true }] } });

        expect(await store.insert(first, now)).toEqual({ kind: 'inserted' });
        const duplicate = await store.insert(
          marker(pk, { fingerprint: 'fp-2', expiresAt: nowSeconds + 2 * hour }),
          now + 1,
        );

        expect(duplicate).toEqual({ kind: 'existing', record: first });
      });

      it('treats a record whose expiresAt has been reached as absent', async () => {
        const pk = key('expired');
        await store.insert(marker(pk, { expiresAt: nowSeconds }), now - hour * 1000);
        const fresh = marker(pk, { fingerprint: 'fp-2' });

        expect(await store.insert(fresh, now)).toEqual({ kind: 'inserted' });
        expect(await store.insert(marker(pk, { fingerprint: 'fp-3' }), now)).toEqual({
          kind: 'existing',
          record: fresh,
        });
      });

      it('reports an insert sent again with its own owner token as inserted, and another owner’s as existing', async () => {
        const pk = key('insert-own');
        const first = marker(pk, { owner: 'owner-a' });
        await store.insert(first, now);

        // An SDK retry after a lost response sends the same put again.
        expect(await store.insert(first, now + 1)).toEqual({ kind: 'inserted' });
        expect(await store.insert(marker(pk, { owner: 'owner-b' }), now + 2)).toEqual({
          kind: 'existing',
          record: first,
        });
        expect(await store.insert(marker(pk), now + 3)).toEqual({ kind: 'existing', record: first });
      });

      it('keeps a record that expires one second after now', async () => {
        const pk = key('live');
        const live = marker(pk, { expiresAt: nowSeconds + 1 });
        await store.insert(live, now);

        expect(await store.insert(marker(pk, { fingerprint: 'fp-2' }), now)).toEqual({
          kind: 'existing',
          record: live,
        });
      });
    });

    describe('commit', () => {
      it('applies the marker and every business write together', async () => {
        const pk = key('commit');
        const [invoice, stock] = [key('invoice'), key('stock')];
        const record = marker(pk);

        const result = await store.commit(
          record,
          [put(invoice, { total: 42, lines: ['a', 'b'] }), putIfAbsent(stock, { reserved: 1 })],
          now,
        );

        expect(result).toEqual({ kind: 'committed' });
        expect(await read(invoice)).toEqual({ pk: invoice, total: 42, lines: ['a', 'b'] });
        expect(await read(stock)).toEqual({ pk: stock, reserved: 1 });
        expect(await store.insert(marker(pk, { fingerprint: 'fp-2' }), now)).toEqual({
          kind: 'existing',
          record,
        });
      });

      it('returns the existing record for a second commit and applies none of its writes', async () => {
        const pk = key('commit-twice');
        const [invoice, other] = [key('invoice'), key('other')];
        const first = marker(pk);
        await store.commit(first, [put(invoice, { version: 1 })], now);

        const second = await store.commit(
          marker(pk, { fingerprint: 'fp-2', committedAt: now + 5 }),
          [put(invoice, { version: 2 }), put(other, { version: 2 })],
          now + 5,
        );

        expect(second).toEqual({ kind: 'existing', record: first });
        expect(await read(invoice)).toEqual({ pk: invoice, version: 1 });
        expect(await read(other)).toBeUndefined();
      });

      it('commits over an expired marker', async () => {
        const pk = key('commit-expired');
        const invoice = key('invoice');
        await store.insert(marker(pk, { expiresAt: nowSeconds - 1 }), now - hour * 1000);

        expect(await store.commit(marker(pk, { fingerprint: 'fp-2' }), [put(invoice)], now)).toEqual({
          kind: 'committed',
        });
        expect(await read(invoice)).toEqual({ pk: invoice });
      });

      it('reports a failed business condition by its index in the writes and applies nothing, not even the marker', async () => {
        const pk = key('condition');
        const [invoice, missing, audit] = [key('invoice'), key('missing'), key('audit')];
        const record = marker(pk);

        const result = await store.commit(record, [put(invoice), requireExists(missing), put(audit)], now);

        expect(result).toMatchObject({ kind: 'condition-failed', index: 1 });
        expect(await read(invoice)).toBeUndefined();
        expect(await read(audit)).toBeUndefined();
        expect(await store.insert(record, now)).toEqual({ kind: 'inserted' });
      });

      it('reports a failed condition on the first business write as index 0', async () => {
        const taken = key('taken');
        await store.commit(marker(key('seed')), [put(taken, { owner: 'first' })], now);
        const pk = key('condition-first');

        const result = await store.commit(marker(pk), [putIfAbsent(taken, { owner: 'second' })], now);

        expect(result).toMatchObject({ kind: 'condition-failed', index: 0 });
        expect(await read(taken)).toEqual({ pk: taken, owner: 'first' });
        expect(await store.insert(marker(pk), now)).toEqual({ kind: 'inserted' });
      });
    });

    describe('release', () => {
      it('keeps a released marker as a released claim: its payload inserts or commits at once, another payload meets it', async () => {
        const pk = key('release-marker-keep');
        await store.insert(marker(pk, { owner: 'owner-a' }), now);

        expect(await store.release(pk, { owner: 'owner-x', status: 'COMPLETED' })).toEqual({
          kind: 'lost-ownership',
        });
        expect(await store.release(pk, { owner: 'owner-a', status: 'COMPLETED' })).toEqual({
          kind: 'ok',
        });
        const released = marker(pk, { status: 'IN_PROGRESS', owner: 'owner-a', leaseExpiresAt: 0 });
        expect(await store.insert(marker(pk, { fingerprint: 'fp-2', owner: 'owner-b' }), now + 1)).toEqual({
          kind: 'existing',
          record: released,
        });
        const retry = marker(pk, { owner: 'owner-c', committedAt: now + 2 });
        expect(await store.insert(retry, now + 2)).toEqual({ kind: 'inserted' });
        expect(await store.insert(marker(pk, { owner: 'owner-d' }), now + 3)).toEqual({
          kind: 'existing',
          record: retry,
        });

        const committed = key('release-commit-keep');
        await store.insert(marker(committed, { owner: 'owner-a' }), now);
        await store.release(committed, { owner: 'owner-a', status: 'COMPLETED' });
        expect(await store.commit(marker(committed), [put(key('after-release'))], now + 1)).toEqual({
          kind: 'committed',
        });
      });

      it('leaves a released marker released when a late copy of its own put lands, so the retry of the payload still runs the effect', async () => {
        const pk = key('release-late-put');
        const first = marker(pk, { owner: 'owner-a' });
        await store.insert(first, now);
        await store.release(pk, { owner: 'owner-a', status: 'COMPLETED' });

        // The put's first attempt, held on the network while the SDK's retry succeeded, lands
        // after the release. Nobody waits for its answer; the record must stay released.
        await store.insert(first, now + 1);
        const released = marker(pk, { status: 'IN_PROGRESS', owner: 'owner-a', leaseExpiresAt: 0 });
        expect(await store.insert(marker(pk, { fingerprint: 'fp-2', owner: 'owner-x' }), now + 2)).toEqual({
          kind: 'existing',
          record: released,
        });
        expect(await store.insert(marker(pk, { owner: 'owner-b' }), now + 3)).toEqual({ kind: 'inserted' });
      });

      it('reports a marker release sent again by its holder as ok, the released claim unchanged', async () => {
        const pk = key('release-again');
        await store.insert(marker(pk, { owner: 'owner-a' }), now);
        await store.release(pk, { owner: 'owner-a', status: 'COMPLETED' });

        // An SDK retry of a release whose response was lost meets the released claim it made.
        expect(await store.release(pk, { owner: 'owner-a', status: 'COMPLETED' })).toEqual({ kind: 'ok' });
        expect(await store.insert(marker(pk, { fingerprint: 'fp-2' }), now + 1)).toEqual({
          kind: 'existing',
          record: marker(pk, { status: 'IN_PROGRESS', owner: 'owner-a', leaseExpiresAt: 0 }),
        });
      });

      it('refuses a marker release retried after another delivery of the payload took the released marker, leaving that marker completed', async () => {
        const pk = key('release-retry-late');
        await store.insert(marker(pk, { owner: 'owner-a' }), now);
        await store.release(pk, { owner: 'owner-a', status: 'COMPLETED' });
        const second = marker(pk, { owner: 'owner-b', committedAt: now + 1 });
        expect(await store.insert(second, now + 1)).toEqual({ kind: 'inserted' });

        // The SDK's retry of owner-a's release, its first answer lost, arrives only now.
        expect(await store.release(pk, { owner: 'owner-a', status: 'COMPLETED' })).toEqual({
          kind: 'lost-ownership',
        });
        expect(await store.insert(marker(pk, { owner: 'owner-c' }), now + 2)).toEqual({
          kind: 'existing',
          record: second,
        });
      });

      it('returns lost-ownership and keeps the record when the guard does not match', async () => {
        const pk = key('release-wrong');
        const record = marker(pk, { owner: 'owner-a' });
        await store.insert(record, now);

        expect(await store.release(pk, { owner: 'nobody', status: 'COMPLETED' })).toEqual({
          kind: 'lost-ownership',
        });
        // Its owner, but as a lease claim: a completed record is never released as one.
        expect(await store.release(pk, { owner: 'owner-a' })).toEqual({ kind: 'lost-ownership' });
        expect(await store.insert(marker(pk, { fingerprint: 'fp-2' }), now)).toEqual({
          kind: 'existing',
          record,
        });
      });

      it('returns lost-ownership for a record that does not exist', async () => {
        expect(await store.release(key('absent'), { owner: 'owner-a', status: 'COMPLETED' })).toEqual({
          kind: 'lost-ownership',
        });
        expect(await store.release(key('absent'), { owner: 'owner-a' })).toEqual({ kind: 'lost-ownership' });
      });

      it('reports a claim release sent again by its owner as ok, and lets a retry of the payload take it without a takeover', async () => {
        const pk = key('release-owner-again');
        await store.claimLease(claim(pk, 'owner-a', now + 30_000), now);
        await store.release(pk, { owner: 'owner-a' });

        expect(await store.release(pk, { owner: 'owner-a' })).toEqual({ kind: 'ok' });
        const again = await store.claimLease(claim(pk, 'owner-b', now + 30_000), now);
        expect(again.kind).toBe('inserted');
        expect(again.takeover ?? false).toBe(false);
      });

      it('keeps a released in-progress claim, its lease end 0, for another payload to meet as a mismatch', async () => {
        const pk = key('release-keep');
        const held = claim(pk, 'owner-a', now + 30_000);
        await store.claimLease(held, now);

        expect(await store.release(pk, { owner: 'owner-a' })).toEqual({
          kind: 'ok',
        });
        const released = { ...held, leaseExpiresAt: 0 };
        expect(
          await store.claimLease(claim(pk, 'owner-b', now + 40_000, { fingerprint: 'fp-2' }), now + 1),
        ).toEqual({ kind: 'existing', record: released });
        expect(await store.insert(marker(pk, { fingerprint: 'fp-2' }), now + 1)).toEqual({
          kind: 'existing',
          record: released,
        });
      });

      it('lets a claim of the same fingerprint take a released claim at once, as a first claim', async () => {
        const pk = key('release-reclaim');
        await store.claimLease(claim(pk, 'owner-a', now + 30_000), now);
        await store.release(pk, { owner: 'owner-a' });
        const retry = claim(pk, 'owner-b', now + 40_000, { committedAt: now + 10 });

        const result = await store.claimLease(retry, now + 10);

        expect(result.kind).toBe('inserted');
        expect(result.takeover ?? false).toBe(false);
        expect(await store.claimLease(claim(pk, 'owner-c', now + 50_000), now + 20)).toEqual({
          kind: 'existing',
          record: retry,
        });
        expect(await store.complete(pk, 'owner-b', { expiresAt: nowSeconds + hour })).toEqual({ kind: 'ok' });
      });

      it('refuses to release a claim for a stranger, or a completed record', async () => {
        const pk = key('release-keep-fenced');
        const held = claim(pk, 'owner-a', now + 30_000);
        await store.claimLease(held, now);

        expect(await store.release(pk, { owner: 'owner-x' })).toEqual({
          kind: 'lost-ownership',
        });
        await store.complete(pk, 'owner-a', { expiresAt: nowSeconds + hour });
        expect(await store.release(pk, { owner: 'owner-a' })).toEqual({
          kind: 'lost-ownership',
        });
        expect(await store.claimLease(claim(pk, 'owner-b', now + 40_000), now + 1)).toMatchObject({
          kind: 'existing',
          record: { status: 'COMPLETED', owner: 'owner-a' },
        });
      });
    });

    describe('two-phase', () => {
      it('claims a new key without a takeover, and returns the live claim to a second claimer', async () => {
        const pk = key('claim');
        const held = claim(pk, 'owner-a', now + 30_000);

        const first = await store.claimLease(held, now);
        const second = await store.claimLease(claim(pk, 'owner-b', now + 40_000), now + 10_000);

        expect(first.kind).toBe('inserted');
        expect(first.takeover ?? false).toBe(false);
        expect(second).toEqual({ kind: 'existing', record: held });
      });

      it('reports an ended lease to a claim that names no owner, and replaces it only when its owner is named', async () => {
        const pk = key('takeover');
        const held = claim(pk, 'owner-a', now + 30_000);
        await store.claimLease(held, now);
        const later = now + 30_001;
        const successor = claim(pk, 'owner-b', later + 30_000, { committedAt: now, takeovers: 1 });

        expect(await store.claimLease(claim(pk, 'owner-b', later + 30_000), later)).toEqual({
          kind: 'existing',
          record: held,
        });
        expect(await store.claimLease(successor, later, { owner: 'owner-a' })).toEqual({
          kind: 'inserted',
          takeover: true,
        });
        expect(await store.complete(pk, 'owner-a', { expiresAt: nowSeconds + hour })).toEqual({
          kind: 'lost-ownership',
        });
        expect(await store.extendLease(pk, 'owner-a', later + 60_000, nowSeconds + hour)).toEqual({
          kind: 'lost-ownership',
        });
        expect(await store.release(pk, { owner: 'owner-a' })).toEqual({ kind: 'lost-ownership' });
        // A second taker that saw owner-a finds the successor's live claim, counters included.
        expect(
          await store.claimLease(claim(pk, 'owner-c', later + 60_000), later + 1, { owner: 'owner-a' }),
        ).toEqual({ kind: 'existing', record: successor });
      });

      it('reports a claim sent again with its own owner token as claimed, a takeover only when one was asked for', async () => {
        const pk = key('claim-own');
        const held = claim(pk, 'owner-a', now + 30_000);
        await store.claimLease(held, now);
        const later = now + 30_001;
        const successor = claim(pk, 'owner-b', later + 30_000, { takeovers: 1 });
        await store.claimLease(successor, later, { owner: 'owner-a' });

        // An SDK retry after a lost response sends the same claim again, and meets the claim itself.
        expect(await store.claimLease(held, now + 1)).toEqual({
          kind: 'existing',
          record: successor,
        });
        expect(await store.claimLease(successor, later + 1)).toEqual({ kind: 'inserted', takeover: false });
        expect(await store.claimLease(successor, later + 2, { owner: 'owner-a' })).toEqual({
          kind: 'inserted',
          takeover: true,
        });
        expect(await store.claimLease(claim(pk, 'owner-c', later + 60_000), later + 3)).toEqual({
          kind: 'existing',
          record: successor,
        });
      });

      it('does not take over a lease that ends exactly now', async () => {
        const pk = key('lease-boundary');
        await store.claimLease(claim(pk, 'owner-a', now + 30_000), now);

        const result = await store.claimLease(claim(pk, 'owner-b', now + 60_000), now + 30_000, {
          owner: 'owner-a',
        });

        expect(result).toMatchObject({ kind: 'existing', record: { owner: 'owner-a' } });
      });

      it('does not take over the claim of another owner than the one named, nor a completed record', async () => {
        const pk = key('takeover-other');
        await store.claimLease(claim(pk, 'owner-a', now + 30_000), now);

        expect(
          await store.claimLease(claim(pk, 'owner-b', now + 90_000), now + 60_000, { owner: 'owner-x' }),
        ).toMatchObject({ kind: 'existing', record: { owner: 'owner-a', status: 'IN_PROGRESS' } });
        // The lease only matters to takeovers: its owner may still complete an ended claim.
        expect(await store.complete(pk, 'owner-a', { expiresAt: nowSeconds + hour })).toEqual({ kind: 'ok' });
        expect(
          await store.claimLease(claim(pk, 'owner-b', now + 90_000), now + 60_000, { owner: 'owner-a' }),
        ).toMatchObject({ kind: 'existing', record: { status: 'COMPLETED' } });
      });

      it('claims an absent key when a takeover is named, without reporting a takeover', async () => {
        const pk = key('takeover-absent');

        const result = await store.claimLease(claim(pk, 'owner-b', now + 30_000), now, { owner: 'owner-a' });

        expect(result.kind).toBe('inserted');
        expect(result.takeover ?? false).toBe(false);
      });

      it('rejects a claim whose lease is absent, zero or not after now, or that has no owner', async () => {
        const pk = key('bad-lease');
        for (const leaseExpiresAt of [undefined, 0, now, now - 1]) {
          await expect(
            store.claimLease(marker(pk, { status: 'IN_PROGRESS', owner: 'owner-a', leaseExpiresAt }), now),
          ).rejects.toMatchObject({ code: 'INVALID_OPTIONS' });
        }
        await expect(store.claimLease(claim(pk, '', now + 30_000), now)).rejects.toMatchObject({
          code: 'INVALID_OPTIONS',
        });
        expect(await store.claimLease(claim(pk, 'owner-a', now + 1), now)).toMatchObject({
          kind: 'inserted',
        });
      });

      it('claims over an expired record without reporting a takeover', async () => {
        const pk = key('claim-expired');
        await store.claimLease(
          claim(pk, 'owner-a', now - 10_000, { expiresAt: nowSeconds - 1 }),
          now - 20_000,
        );

        const result = await store.claimLease(claim(pk, 'owner-b', now + 30_000), now);

        expect(result.kind).toBe('inserted');
        expect(result.takeover ?? false).toBe(false);
      });

      it('completes a claim with its result, after which the key is never claimed again', async () => {
        const pk = key('complete');
        const held = claim(pk, 'owner-a', now + 30_000);
        await store.claimLease(held, now);

        const completed = await store.complete(pk, 'owner-a', {
          expiresAt: nowSeconds + 2 * hour,
          result: { paymentId: 'pay-1', amount: 1250 },
        });
        const afterLease = await store.claimLease(claim(pk, 'owner-b', now + 90_000), now + 60_000);

        expect(completed).toEqual({ kind: 'ok' });
        if (afterLease.kind !== 'existing')
          throw new Error(`expected the completed record, got ${afterLease.kind}`);
        // Whether the owner token stays on a completed record is up to the implementation.
        const { owner: _owner, ...record } = afterLease.record;
        const { owner: _heldOwner, leaseExpiresAt: _lease, ...unchanged } = held;
        expect(record).toEqual({
          ...unchanged,
          status: 'COMPLETED',
          expiresAt: nowSeconds + 2 * hour,
          result: { paymentId: 'pay-1', amount: 1250 },
        });
      });

      it('completes without a result', async () => {
        const pk = key('complete-empty');
        await store.claimLease(claim(pk, 'owner-a', now + 30_000), now);

        expect(await store.complete(pk, 'owner-a', { expiresAt: nowSeconds + hour })).toEqual({ kind: 'ok' });
        const after = await store.insert(marker(pk), now);
        expect(after).toMatchObject({ kind: 'existing', record: { status: 'COMPLETED' } });
        expect(after.kind === 'existing' && after.record.result).toBeUndefined();
      });

      it('reports a completion sent again by its own owner as ok without rewriting it, and refuses to release or extend it', async () => {
        const pk = key('complete-twice');
        await store.claimLease(claim(pk, 'owner-a', now + 30_000), now);
        await store.complete(pk, 'owner-a', { expiresAt: nowSeconds + hour, result: 'first' });

        // An SDK retry of a completion whose response was lost meets the claim's own completed record.
        expect(
          await store.complete(pk, 'owner-a', { expiresAt: nowSeconds + 2 * hour, result: 'second' }),
        ).toEqual({ kind: 'ok' });
        expect(await store.complete(pk, 'owner-b', { expiresAt: nowSeconds + hour })).toEqual({
          kind: 'lost-ownership',
        });
        expect(await store.extendLease(pk, 'owner-a', now + 60_000, nowSeconds + hour)).toEqual({
          kind: 'lost-ownership',
        });
        expect(await store.release(pk, { owner: 'owner-a' })).toEqual({ kind: 'lost-ownership' });
        expect(await store.insert(marker(pk), now)).toMatchObject({
          kind: 'existing',
          record: { status: 'COMPLETED', result: 'first', expiresAt: nowSeconds + hour },
        });
      });

      it('refuses a completion by the owner of a claim taken over and completed by another', async () => {
        const pk = key('complete-after-takeover');
        await store.claimLease(claim(pk, 'owner-a', now + 1_000), now);
        await store.claimLease(claim(pk, 'owner-b', now + 60_000), now + 2_000, { owner: 'owner-a' });
        await store.complete(pk, 'owner-b', { expiresAt: nowSeconds + hour });

        expect(await store.complete(pk, 'owner-a', { expiresAt: nowSeconds + hour })).toEqual({
          kind: 'lost-ownership',
        });
      });

      it('extends the lease of its owner so that no one takes it over at the old lease end', async () => {
        const pk = key('extend');
        await store.claimLease(claim(pk, 'owner-a', now + 30_000), now);

        expect(await store.extendLease(pk, 'owner-a', now + 90_000, nowSeconds + 2 * hour)).toEqual({
          kind: 'ok',
        });
        expect(await store.claimLease(claim(pk, 'owner-b', now + 120_000), now + 60_000)).toMatchObject({
          kind: 'existing',
          record: { owner: 'owner-a', leaseExpiresAt: now + 90_000 },
        });
      });

      it('moves expiresAt with the lease, so the claim outlives a TTL it was claimed with', async () => {
        const pk = key('extend-ttl');
        await store.claimLease(claim(pk, 'owner-a', now + 30_000, { expiresAt: nowSeconds + 60 }), now);
        const extended = claim(pk, 'owner-a', now + 120_000, { expiresAt: nowSeconds + 180 });

        expect(await store.extendLease(pk, 'owner-a', now + 120_000, nowSeconds + 180)).toEqual({
          kind: 'ok',
        });
        // Past the first expiresAt the claim is live: in progress, and taken over only when named.
        expect(await store.claimLease(claim(pk, 'owner-b', now + 200_000), now + 100_000)).toEqual({
          kind: 'existing',
          record: extended,
        });
      });

      it('never moves a lease back: an older extension delayed past a newer one, or sent again, is ok and changes nothing', async () => {
        const pk = key('extend-forward');
        await store.claimLease(claim(pk, 'owner-a', now + 30_000), now);
        await store.extendLease(pk, 'owner-a', now + 90_000, nowSeconds + 2 * hour);
        const extended = claim(pk, 'owner-a', now + 90_000, { expiresAt: nowSeconds + 2 * hour });

        expect(await store.extendLease(pk, 'owner-a', now + 60_000, nowSeconds + hour + 60)).toEqual({
          kind: 'ok',
        });
        expect(await store.extendLease(pk, 'owner-a', now + 90_000, nowSeconds + 2 * hour)).toEqual({
          kind: 'ok',
        });
        expect(await store.claimLease(claim(pk, 'owner-b', now + 200_000), now + 1)).toEqual({
          kind: 'existing',
          record: extended,
        });
      });

      it('refuses to extend or complete a released claim, so a late extension never revives it', async () => {
        const pk = key('extend-released');
        const held = claim(pk, 'owner-a', now + 30_000);
        await store.claimLease(held, now);
        await store.release(pk, { owner: 'owner-a' });

        expect(await store.extendLease(pk, 'owner-a', now + 90_000, nowSeconds + 2 * hour)).toEqual({
          kind: 'lost-ownership',
        });
        expect(await store.complete(pk, 'owner-a', { expiresAt: nowSeconds + hour })).toEqual({
          kind: 'lost-ownership',
        });
        // Still the released claim: the retry of the payload takes it at once, as a first claim.
        const retry = await store.claimLease(claim(pk, 'owner-b', now + 40_000), now + 1);
        expect(retry.kind).toBe('inserted');
        expect(retry.takeover ?? false).toBe(false);
      });

      it('returns lost-ownership when a stranger completes or extends a claim', async () => {
        const pk = key('stranger');
        await store.claimLease(claim(pk, 'owner-a', now + 30_000), now);

        expect(await store.complete(pk, 'owner-x', { expiresAt: nowSeconds + hour })).toEqual({
          kind: 'lost-ownership',
        });
        expect(await store.extendLease(pk, 'owner-x', now + 90_000, nowSeconds + hour)).toEqual({
          kind: 'lost-ownership',
        });
        expect(await store.complete(key('absent'), 'owner-a', { expiresAt: nowSeconds + hour })).toEqual({
          kind: 'lost-ownership',
        });
      });
    });

    describe('replace', () => {
      it('replaces the fingerprint, result and expiry while the record carries the given fingerprint', async () => {
        const pk = key('replace');
        await store.insert(marker(pk, { fingerprint: 'token-1' }), now);

        expect(
          await store.replace(pk, 'token-1', {
            fingerprint: 'token-2',
            expiresAt: nowSeconds + 2 * hour,
            result: '{"value":1}',
          }),
        ).toEqual({ kind: 'ok' });
        expect(
          await store.replace(pk, 'token-2', { fingerprint: 'token-3', expiresAt: nowSeconds + 3 * hour }),
        ).toEqual({ kind: 'ok' });

        expect(await store.insert(marker(pk), now)).toEqual({
          kind: 'existing',
          record: marker(pk, {
            fingerprint: 'token-3',
            expiresAt: nowSeconds + 3 * hour,
            result: '{"value":1}',
          }),
        });
      });

      it('reports a replacement sent again with its own next fingerprint as ok, and a stale or absent one as lost-ownership', async () => {
        const pk = key('replace-fenced');
        await store.insert(marker(pk, { fingerprint: 'token-1' }), now);
        const next = { fingerprint: 'token-2', expiresAt: nowSeconds + hour, result: '"mine"' };
        await store.replace(pk, 'token-1', next);

        // An SDK retry of a replacement whose response was lost meets its own fingerprint.
        expect(await store.replace(pk, 'token-1', next)).toEqual({ kind: 'ok' });
        expect(
          await store.replace(pk, 'token-1', { fingerprint: 'token-x', expiresAt: nowSeconds + hour }),
        ).toEqual({ kind: 'lost-ownership' });
        expect(
          await store.replace(key('replace-absent'), 'token-1', {
            fingerprint: 'token-y',
            expiresAt: nowSeconds + hour,
          }),
        ).toEqual({ kind: 'lost-ownership' });
        expect(await store.insert(marker(pk), now)).toMatchObject({
          record: { fingerprint: 'token-2', result: '"mine"' },
        });
      });

      it('expires a record replaced with an expiry of now, so an insert takes the key', async () => {
        const pk = key('replace-expire');
        await store.insert(marker(pk, { fingerprint: 'token-1' }), now);

        await store.replace(pk, 'token-1', { fingerprint: 'token-2', expiresAt: nowSeconds });

        expect(await store.insert(marker(pk, { fingerprint: 'fp-new' }), now)).toEqual({ kind: 'inserted' });
      });
    });

    describe('putIfNewer', () => {
      const versioned = (pk: string, version: number | string, item: Record<string, unknown> = {}) =>
        store.putIfNewer({
          TableName: business,
          Item: { pk, version, ...item },
          versionAttribute: 'version',
        });

      it('writes an absent or older item, and fails its condition on the same or a newer version', async () => {
        const pk = key('versioned');
        const staleMarker = key('stale');

        expect(await store.commit(marker(key('v1')), [versioned(pk, 1)], now)).toEqual({ kind: 'committed' });
        expect(await store.commit(marker(key('v3')), [versioned(pk, 3)], now)).toEqual({ kind: 'committed' });
        expect(
          await store.commit(marker(staleMarker), [put(key('other')), versioned(pk, 2)], now),
        ).toMatchObject({
          kind: 'condition-failed',
          index: 1,
        });
        expect(await store.commit(marker(key('v3b')), [versioned(pk, 3, { name: 'b' })], now)).toMatchObject({
          kind: 'condition-failed',
          index: 0,
        });

        expect(await read(pk)).toEqual({ pk, version: 3 });
        expect(await store.insert(marker(staleMarker), now)).toEqual({ kind: 'inserted' });
      });

      it('compares string versions in order and writes over an item that has no version', async () => {
        const [dated, unversioned] = [key('dated'), key('unversioned')];
        await store.commit(marker(key('seed')), [put(unversioned, { name: 'legacy' })], now);

        expect(
          await store.commit(marker(key('d1')), [versioned(dated, '2026-01-02T00:00:00Z')], now),
        ).toEqual({
          kind: 'committed',
        });
        expect(
          await store.commit(marker(key('d0')), [versioned(dated, '2026-01-01T23:59:59Z')], now),
        ).toMatchObject({ kind: 'condition-failed', index: 0 });
        expect(await store.commit(marker(key('u1')), [versioned(unversioned, 1)], now)).toEqual({
          kind: 'committed',
        });
        expect(await read(unversioned)).toEqual({ pk: unversioned, version: 1 });
      });
    });

    describe('commitMany', () => {
      const marked = (fingerprint = 'fp-1') => ({ index: 0, keyAttribute: 'pk', fingerprint });
      const commitMany = (commits: readonly AtomicCommit[], at = now) => {
        if (!store.commitMany) throw new Error('the store has no commitMany');
        return store.commitMany(commits, at);
      };

      it('commits every member in one transaction: inbox markers and a marked item side by side', async () => {
        const [a, b, order, invoiceA, invoiceB] = [
          key('many-a'),
          key('many-b'),
          key('many-item'),
          key('inv'),
          key('inv'),
        ];

        const results = await commitMany([
          { record: marker(a), writes: [put(invoiceA, { total: 1 })] },
          { writes: [put(order, { total: 2 })], marker: marked() },
          { record: marker(b), writes: [put(invoiceB, { total: 3 })] },
        ]);

        expect(results).toEqual([{ kind: 'committed' }, { kind: 'committed' }, { kind: 'committed' }]);
        expect(await read(invoiceA)).toEqual({ pk: invoiceA, total: 1 });
        expect(await read(order)).toEqual({ pk: order, total: 2, [ENTITY_FINGERPRINT_ATTRIBUTE]: 'fp-1' });
        expect(await read(invoiceB)).toEqual({ pk: invoiceB, total: 3 });
        expect(await store.insert(marker(b, { fingerprint: 'fp-2' }), now)).toMatchObject({
          kind: 'existing',
        });
      });

      it('reads a duplicate in the middle as its own commit would, applies nothing, and leaves the others not applied', async () => {
        const [a, dup, c, invoiceA, invoiceDup, invoiceC] = [
          key('many-a'),
          key('many-dup'),
          key('many-c'),
          key('inv'),
          key('inv'),
          key('inv'),
        ];
        const first = marker(dup);
        await store.commit(first, [put(invoiceDup, { version: 1 })], now);

        const results = await commitMany([
          { record: marker(a), writes: [put(invoiceA)] },
          { record: marker(dup, { fingerprint: 'fp-2' }), writes: [put(invoiceDup, { version: 2 })] },
          { record: marker(c), writes: [put(invoiceC)] },
        ]);

        expect(results).toEqual([
          { kind: 'not-applied' },
          { kind: 'existing', record: first },
          { kind: 'not-applied' },
        ]);
        expect(await read(invoiceA)).toBeUndefined();
        expect(await read(invoiceDup)).toEqual({ pk: invoiceDup, version: 1 });
        expect(await read(invoiceC)).toBeUndefined();
        expect(await store.insert(marker(a), now)).toEqual({ kind: 'inserted' });
      });

      it("reads each failing member's share: a marked item met again, and a business condition by its index", async () => {
        const [order, b, c, missing, invoiceC] = [
          key('many-item'),
          key('many-b'),
          key('many-c'),
          key('missing'),
          key('inv'),
        ];
        await store.commitWithItemMarker([put(order, { total: 1 }), put(key('line'))], marked('fp-1'), now);

        const results = await commitMany([
          { writes: [put(order, { total: 9 }), put(key('line'))], marker: marked('fp-9') },
          { record: marker(b), writes: [put(key('inv')), requireExists(missing)] },
          { record: marker(c), writes: [put(invoiceC)] },
        ]);

        expect(results[0]).toMatchObject({ kind: 'existing', record: { pk: order, fingerprint: 'fp-1' } });
        expect(results[1]).toMatchObject({ kind: 'condition-failed', index: 1 });
        expect(results[2]).toEqual({ kind: 'not-applied' });
        expect(await read(order)).toEqual({ pk: order, total: 1, [ENTITY_FINGERPRINT_ATTRIBUTE]: 'fp-1' });
        expect(await read(invoiceC)).toBeUndefined();
      });

      it('refuses two members writing one item as a whole (VALIDATION), applying nothing', async () => {
        const [a, b, shared] = [key('many-a'), key('many-b'), key('shared')];

        await expect(
          commitMany([
            { record: marker(a), writes: [put(shared, { by: 'a' })] },
            { record: marker(b), writes: [put(shared, { by: 'b' })] },
          ]),
        ).rejects.toMatchObject({ code: 'VALIDATION' });
        expect(await read(shared)).toBeUndefined();
        expect(await store.insert(marker(a), now)).toEqual({ kind: 'inserted' });
      });
    });

    describe('commitWithItemMarker', () => {
      const marked = (fingerprint = 'fp-1') => ({ index: 0, keyAttribute: 'pk', fingerprint });
      const order = (
        pk: string,
        item: Record<string, unknown> = {},
        condition: Partial<TransactWriteAction['Put']> = {},
      ) => ({
        Put: { TableName: business, Item: { pk, ...item }, ...condition },
      });

      it('commits the writes with the fingerprint on the marked item, then reads a redelivery from that item', async () => {
        const [pk, line] = [key('item-marker'), key('item-marker-line')];

        expect(await store.commitWithItemMarker([order(pk, { total: 3 }), put(line)], marked(), now)).toEqual(
          {
            kind: 'committed',
          },
        );
        const again = await store.commitWithItemMarker(
          [order(pk, { total: 9 }), put(line, { total: 9 })],
          marked('fp-2'),
          now + 1,
        );

        expect(again).toMatchObject({
          kind: 'existing',
          record: { pk, status: 'COMPLETED', fingerprint: 'fp-1', expiresAt: Number.MAX_SAFE_INTEGER },
        });
        expect(await read(pk)).toEqual({ pk, total: 3, [ENTITY_FINGERPRINT_ATTRIBUTE]: 'fp-1' });
        expect(await read(line)).toEqual({ pk: line });
      });

      it('reads an item written without a fingerprint as existing with an empty fingerprint', async () => {
        const pk = key('item-marker-foreign');
        await store.commit(marker(key('seed')), [put(pk, { total: 1 })], now);

        expect(await store.commitWithItemMarker([order(pk)], marked(), now)).toMatchObject({
          kind: 'existing',
          record: { pk, fingerprint: '' },
        });
        expect(await read(pk)).toEqual({ pk, total: 1 });
      });

      it('reports the marked put’s own condition failing on an absent item as condition-failed at its index', async () => {
        const [pk, missing] = [key('item-marker-own'), key('item-marker-missing')];

        const result = await store.commitWithItemMarker(
          [requireExists(missing), order(pk, {}, { ConditionExpression: 'attribute_exists(pk)' })],
          { ...marked(), index: 1 },
          now,
        );

        // The condition check on a missing item fails too: the marked put's reason is read first.
        expect(result).toMatchObject({ kind: 'condition-failed', index: 1 });
        expect(
          await store.commitWithItemMarker(
            [put(key('item-marker-other')), order(pk, {}, { ConditionExpression: 'attribute_exists(pk)' })],
            { ...marked(), index: 1 },
            now,
          ),
        ).toMatchObject({ kind: 'condition-failed', index: 1 });
        expect(await read(pk)).toBeUndefined();
      });

      describe('the marked put alone (one conditional PutItem on DynamoDB)', () => {
        it('writes the item with its fingerprint on a first delivery', async () => {
          const pk = key('lone-first');

          expect(await store.commitWithItemMarker([order(pk, { total: 3 })], marked(), now)).toEqual({
            kind: 'committed',
          });
          expect(await read(pk)).toEqual({ pk, total: 3, [ENTITY_FINGERPRINT_ATTRIBUTE]: 'fp-1' });
        });

        it('meets its own item when sent again after a lost response: existing with its fingerprint, the item unchanged', async () => {
          const pk = key('lone-retry');
          const writes = [order(pk, { total: 3 })];
          await store.commitWithItemMarker(writes, marked(), now);

          // The SDK's retry (or a redelivery) of the same put, its first answer lost.
          const again = await store.commitWithItemMarker(writes, marked(), now + 1);

          // Read as entity mode reads its item: completed, never expiring, no consumer.
          const record = { pk, status: 'COMPLETED', fingerprint: 'fp-1', consumer: '' };
          expect(again).toEqual({
            kind: 'existing',
            record: { ...record, expiresAt: Number.MAX_SAFE_INTEGER },
          });
          expect(await read(pk)).toEqual({ pk, total: 3, [ENTITY_FINGERPRINT_ATTRIBUTE]: 'fp-1' });
        });

        it('reports another payload at the key as existing with the stored fingerprint, writing nothing', async () => {
          const pk = key('lone-mismatch');
          await store.commitWithItemMarker([order(pk, { total: 3 })], marked(), now);

          expect(
            await store.commitWithItemMarker([order(pk, { total: 9 })], marked('fp-2'), now),
          ).toMatchObject({
            kind: 'existing',
            record: { pk, fingerprint: 'fp-1' },
          });
          expect(await read(pk)).toEqual({ pk, total: 3, [ENTITY_FINGERPRINT_ATTRIBUTE]: 'fp-1' });
        });

        it('reports an item written without a fingerprint as existing with an empty fingerprint', async () => {
          const pk = key('lone-foreign');
          await store.commit(marker(key('seed')), [put(pk, { total: 1 })], now);

          expect(await store.commitWithItemMarker([order(pk, { total: 3 })], marked(), now)).toMatchObject({
            kind: 'existing',
            record: { pk, fingerprint: '' },
          });
          expect(await read(pk)).toEqual({ pk, total: 1 });
        });

        it('reports its own condition failing on an absent or expired item as condition-failed at index 0, writing nothing', async () => {
          const [absent, expired] = [key('lone-own-absent'), key('lone-own-expired')];
          const requireItem = { ConditionExpression: 'attribute_exists(pk)' };
          await store.commitWithItemMarker([order(expired, { expiresAt: nowSeconds })], marked(), now);

          expect(
            await store.commitWithItemMarker([order(absent, {}, requireItem)], marked(), now),
          ).toMatchObject({
            kind: 'condition-failed',
            index: 0,
          });
          // The expired item passes the marker's part and fails the put's own (it exists).
          expect(
            await store.commitWithItemMarker(
              [order(expired, {}, { ConditionExpression: 'attribute_not_exists(pk)' })],
              marked('fp-2'),
              now,
            ),
          ).toMatchObject({ kind: 'condition-failed', index: 0 });
          expect(await read(absent)).toBeUndefined();
          expect(await read(expired)).toEqual({
            pk: expired,
            expiresAt: nowSeconds,
            [ENTITY_FINGERPRINT_ATTRIBUTE]: 'fp-1',
          });
        });
      });

      it('writes over a marked item whose numeric expiresAt has been reached', async () => {
        const pk = key('item-marker-ttl');
        await store.commitWithItemMarker([order(pk, { expiresAt: nowSeconds + 10 })], marked(), now);

        expect(
          await store.commitWithItemMarker([order(pk, { total: 2 })], marked('fp-2'), now + 10_000),
        ).toEqual({
          kind: 'committed',
        });
        expect(await read(pk)).toEqual({ pk, total: 2, [ENTITY_FINGERPRINT_ATTRIBUTE]: 'fp-2' });
      });
    });

    describe('insertEntity', () => {
      it('writes the business item with its fingerprint, then reports a duplicate without changing it', async () => {
        const pk = key('entity');
        const entity = { tableName: business, keyAttribute: 'pk', item: { pk, total: 42, currency: 'EUR' } };

        const first = await store.insertEntity(entity, 'fp-1', now);
        const duplicate = await store.insertEntity(
          { ...entity, item: { pk, total: 99, currency: 'USD' } },
          'fp-2',
          now + 1,
        );

        expect(first).toEqual({ kind: 'inserted' });
        expect(duplicate).toMatchObject({
          kind: 'existing',
          record: { pk, status: 'COMPLETED', fingerprint: 'fp-1', expiresAt: Number.MAX_SAFE_INTEGER },
        });
        expect(await read(pk)).toEqual({
          pk,
          total: 42,
          currency: 'EUR',
          [ENTITY_FINGERPRINT_ATTRIBUTE]: 'fp-1',
        });
      });

      it('reports an item written without a fingerprint with an empty fingerprint', async () => {
        const pk = key('entity-foreign');
        await store.commit(marker(key('seed')), [put(pk, { total: 1 })], now);

        const result = await store.insertEntity(
          { tableName: business, keyAttribute: 'pk', item: { pk } },
          'fp-1',
          now,
        );

        expect(result).toMatchObject({
          kind: 'existing',
          record: { pk, status: 'COMPLETED', fingerprint: '' },
        });
      });

      it('takes the expiry of an entity from its numeric expiresAt, and writes over it once reached', async () => {
        const pk = key('entity-ttl');
        const entity = (expiresAt: number, total: number) => ({
          tableName: business,
          keyAttribute: 'pk',
          item: { pk, total, expiresAt },
        });
        await store.insertEntity(entity(nowSeconds + 10, 1), 'fp-1', now);

        expect(await store.insertEntity(entity(nowSeconds + hour, 2), 'fp-2', now)).toMatchObject({
          kind: 'existing',
          record: { pk, fingerprint: 'fp-1', expiresAt: nowSeconds + 10 },
        });
        expect(await store.insertEntity(entity(nowSeconds + hour, 3), 'fp-3', now + 10_000)).toEqual({
          kind: 'inserted',
        });
        expect(await read(pk)).toMatchObject({ total: 3, [ENTITY_FINGERPRINT_ATTRIBUTE]: 'fp-3' });
      });
    });
  });
}
