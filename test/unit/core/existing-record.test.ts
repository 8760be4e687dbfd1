import { describe, expect, it } from 'vitest';
import { readExistingRecord } from '../../../lambda/core/existing-record';
import { outcomeOfExisting } from '../../../lambda/core/outcome';
import type { InboxRecord } from '../../../lambda/core/store-port';

const NOW = Date.UTC(2026, 0, 1, 12);
const NOW_SECONDS = NOW / 1000;

const completed = (overrides: Partial<InboxRecord> = {}): InboxRecord => ({
  pk: 'payments#k-1',
  status: 'COMPLETED',
  fingerprint: 'f-1',
  expiresAt: NOW_SECONDS + 3600,
  consumer: 'payments',
  committedAt: NOW - 10_000,
  ...overrides,
});

const claim = (overrides: Partial<InboxRecord> = {}): InboxRecord =>
  completed({ status: 'IN_PROGRESS', owner: 'owner-a', leaseExpiresAt: NOW + 30_000, ...overrides });

describe('readExistingRecord', () => {
  it('reads a record whose expiresAt has come as expired, whatever else it holds', () => {
    expect(readExistingRecord(completed({ expiresAt: NOW_SECONDS }), 'f-1', NOW)).toEqual({
      kind: 'expired',
    });
    expect(readExistingRecord(claim({ expiresAt: NOW_SECONDS - 1 }), 'f-2', NOW)).toEqual({
      kind: 'expired',
    });
  });

  it('reads a live record one second before its expiresAt as live', () => {
    expect(readExistingRecord(completed({ expiresAt: NOW_SECONDS + 1 }), 'f-1', NOW)).toEqual({
      kind: 'completed',
      result: undefined,
    });
  });

  it('reads another fingerprint as a mismatch, before the status', () => {
    expect(readExistingRecord(completed(), 'f-2', NOW)).toEqual({
      kind: 'mismatch',
      storedFingerprint: 'f-1',
    });
    expect(readExistingRecord(claim(), 'f-2', NOW)).toEqual({ kind: 'mismatch', storedFingerprint: 'f-1' });
    expect(readExistingRecord(claim({ leaseExpiresAt: 0 }), 'f-2', NOW)).toEqual({
      kind: 'mismatch',
      storedFingerprint: 'f-1',
    });
  });

  it("reads an entity item written by something else (fingerprint '') as a mismatch", () => {
    expect(readExistingRecord(completed({ fingerprint: '' }), 'f-1', NOW)).toEqual({
      kind: 'mismatch',
      storedFingerprint: '',
    });
  });

  it('reads a completed record of the same payload as completed, with its stored result', () => {
    expect(readExistingRecord(completed({ result: '{"id":7}' }), 'f-1', NOW)).toEqual({
      kind: 'completed',
      result: '{"id":7}',
    });
    expect(readExistingRecord(completed(), 'f-1', NOW)).toEqual({ kind: 'completed', result: undefined });
  });

  it('reads a claim whose lease runs (up to and including its lease end) as in flight, with the lease end', () => {
    expect(readExistingRecord(claim(), 'f-1', NOW)).toEqual({
      kind: 'in-flight',
      leaseExpiresAt: NOW + 30_000,
    });
    expect(readExistingRecord(claim({ leaseExpiresAt: NOW }), 'f-1', NOW)).toEqual({
      kind: 'in-flight',
      leaseExpiresAt: NOW,
    });
  });

  it('reads a claim whose lease ended as lease-ended, with the owner to fence a takeover with', () => {
    expect(readExistingRecord(claim({ leaseExpiresAt: NOW - 1 }), 'f-1', NOW)).toEqual({
      kind: 'lease-ended',
      owner: 'owner-a',
      leaseExpiresAt: NOW - 1,
    });
  });

  it('reads a claim released after a failure (lease end 0) as released', () => {
    expect(readExistingRecord(claim({ leaseExpiresAt: 0 }), 'f-1', NOW)).toEqual({ kind: 'released' });
  });

  it('reads a claim without an owner or without a lease end as in flight: nothing fences a takeover', () => {
    const { owner: _owner, ...withoutOwner } = claim({ leaseExpiresAt: NOW - 1 });
    const { leaseExpiresAt: _lease, ...withoutLease } = claim();

    expect(readExistingRecord(withoutOwner, 'f-1', NOW)).toEqual({
      kind: 'in-flight',
      leaseExpiresAt: NOW - 1,
    });
    expect(readExistingRecord(withoutLease, 'f-1', NOW)).toEqual({
      kind: 'in-flight',
      leaseExpiresAt: undefined,
    });
  });
});

describe('outcomeOfExisting maps each reading to the outcome of a message', () => {
  it('retries an expired record, dead-letters another payload, acknowledges a completed one', () => {
    expect(outcomeOfExisting(completed({ expiresAt: NOW_SECONDS }), 'f-1', NOW)).toEqual({
      kind: 'retry',
      code: 'EXPIRED_RECORD',
      reason: 'The store returned an expired inbox record; retrying treats it as absent',
    });
    expect(outcomeOfExisting(completed(), 'f-2', NOW)).toEqual({
      kind: 'mismatch',
      code: 'PAYLOAD_MISMATCH',
      reason:
        'The dedup key was already used with a different payload (stored fingerprint f-1, this message f-2)',
    });
    expect(outcomeOfExisting(completed(), 'f-1', NOW)).toEqual({ kind: 'duplicate' });
  });

  it('retries a message whose key a claim holds: running, crashed or released', () => {
    expect(outcomeOfExisting(claim(), 'f-1', NOW)).toEqual({ kind: 'in-flight' });
    expect(outcomeOfExisting(claim({ leaseExpiresAt: NOW - 1 }), 'f-1', NOW)).toEqual({ kind: 'in-flight' });
    expect(outcomeOfExisting(claim({ leaseExpiresAt: 0 }), 'f-1', NOW)).toEqual({ kind: 'in-flight' });
  });
});
