import { describe, expect, it } from 'vitest';
import { claimExpiresAt, isLeaseEnded, isLeaseWithinTtl } from '../../../lambda/core/lease';
import type { InboxRecord } from '../../../lambda/core/store-port';

const T0 = Date.UTC(2026, 0, 1);

/** A claim made at T0 whose one-second lease ends at T0 + 1000. */
const CLAIM: InboxRecord = {
  pk: 'jobs#report:2026-01-01',
  status: 'IN_PROGRESS',
  fingerprint: 'f',
  expiresAt: T0 / 1000 + 3600,
  consumer: 'jobs',
  leaseExpiresAt: T0 + 1000,
  owner: 'a',
};

describe('isLeaseEnded', () => {
  it('holds only for a live in-progress claim whose lease ended before now', () => {
    expect(isLeaseEnded(CLAIM, T0 + 1001)).toBe(true);
    expect(isLeaseEnded(CLAIM, T0 + 1000)).toBe(false);
    expect(isLeaseEnded({ ...CLAIM, status: 'COMPLETED' }, T0 + 5000)).toBe(false);
    expect(isLeaseEnded({ ...CLAIM, expiresAt: T0 / 1000 }, T0 + 5000)).toBe(false);
  });

  it('needs an owner to fence the takeover with and a lease end to compare', () => {
    const { owner: _owner, ...withoutOwner } = CLAIM;
    const { leaseExpiresAt: _lease, ...withoutLease } = CLAIM;

    expect(isLeaseEnded(withoutOwner, T0 + 5000)).toBe(false);
    expect(isLeaseEnded(withoutLease, T0 + 5000)).toBe(false);
  });
});

describe('claimExpiresAt', () => {
  it('lives the TTL past the lease end, rounded up to the second', () => {
    expect(claimExpiresAt(1_700_000_030_500, 3600)).toBe(1_700_003_631);
    expect(claimExpiresAt(1_700_000_030_000, 3600)).toBe(1_700_003_630);
  });
});

describe('isLeaseWithinTtl', () => {
  it('holds only for a lease shorter than the TTL', () => {
    expect(isLeaseWithinTtl(30_000, 3600)).toBe(true);
    expect(isLeaseWithinTtl(3_599_999, 3600)).toBe(true);
    expect(isLeaseWithinTtl(3_600_000, 3600)).toBe(false);
  });
});
