/**
 * The hand-written mirrors' fingerprints (`bench/implementations/hand-written.ts`): with
 * `canonical` a mirror's markers carry the toolkit's fingerprint byte for byte, so
 * `bench:profile -- --measure --mirror-fingerprint canonical` compares CPU against a mirror that
 * pays for the same canonical form; by default (the bench's baseline) it hashes the body as it came.
 */
import { describe, expect, it } from 'vitest';
import { IMPLEMENTATIONS } from '../../../bench/implementations';
import type { MirrorFingerprint } from '../../../bench/implementations/hand-written';
import { createCpuRig } from '../../../bench/measure/cpu';
import { batchOf, benchContext, DEFAULT_TABLES, type OrderEvent } from '../../../bench/workload';
import type { SqsEvent } from '../../../lambda';

const implementation = (id: string) => IMPLEMENTATIONS.find((candidate) => candidate.id === id)!;

/** The fingerprint each record of `batch` left in its marker, after `id` ran the batch on the stub. */
async function fingerprints(
  id: string,
  batch: SqsEvent,
  where: 'inbox' | 'item',
  mirrorFingerprint?: MirrorFingerprint,
): Promise<unknown[]> {
  const rig = createCpuRig(implementation(id), DEFAULT_TABLES, { mirrorFingerprint });
  const response = await rig.handler(batch, benchContext());
  expect(response.batchItemFailures).toEqual([]);
  // The stub keeps items as DynamoDB's wire form (`{ S: '...' }`).
  return batch.Records.map((record) => {
    const order = JSON.parse(record.body) as OrderEvent;
    const stored =
      where === 'item'
        ? rig.table.get(DEFAULT_TABLES.orders, { pk: { S: `ORDER#${order.orderId}#${order.status}` } })
            ?.eoFingerprint
        : rig.table.get(DEFAULT_TABLES.inbox, { pk: { S: `bench-orders#${order.orderId}:${order.status}` } })
            ?.fingerprint;
    return stored?.S;
  });
}

describe('bench mirror fingerprints', () => {
  const batch = batchOf('mirror-fingerprint', 0, 10);

  it.each([
    ['atomic', 'manual-atomic-batch', 'inbox'],
    ['marker', 'manual-marker', 'inbox'],
    ['entity', 'manual-entity', 'item'],
    ['atomic-item', 'manual-atomic-item', 'item'],
  ] as const)(
    'a %s mirror with `canonical` writes the toolkit’s fingerprints, with `body` others',
    async (mode, mirror, where) => {
      const toolkit = await fingerprints(mode, batch, where);
      expect(toolkit).toHaveLength(10);
      for (const fingerprint of toolkit) expect(fingerprint).toMatch(/^[0-9a-f]{64}$/);
      expect(await fingerprints(mirror, batch, where, 'canonical')).toEqual(toolkit);
      // The bench's bodies are not in canonical order, so hashing them as they came gives others.
      const asSent = await fingerprints(mirror, batch, where, 'body');
      for (const [index, fingerprint] of asSent.entries()) expect(fingerprint).not.toBe(toolkit[index]);
    },
  );
});
