/**
 * `bench:profile --parts`: each part runs the toolkit's code on the bench's messages (a part that
 * no longer fits the engine's code fails here, not in a benchmark run), and gives a CPU figure
 * per call for the toolkit and, where it has one, for the mirror's counterpart.
 */
import { describe, expect, it } from 'vitest';
import { measureParts } from '../../../bench/measure/parts';

describe('measureParts', () => {
  it('times every part on the toolkit and, where it has one, on the mirror', async () => {
    const figures = await measureParts(1, 40);
    expect(figures.map(({ part, per }) => [part, per])).toEqual([
      ['prepare', 'message'],
      ['fingerprint', 'message'],
      ['limits', 'message'],
      ['unit of work', 'message'],
      ['commit rounds', 'batch of 10'],
    ]);
    for (const figure of figures) {
      expect(figure.toolkitMicros).toBeGreaterThan(0);
      expect(figure.mirrorMicros === undefined).toBe(figure.mirror === undefined);
    }
    expect(figures.filter((figure) => figure.mirrorMicros !== undefined).map(({ part }) => part)).toEqual([
      'prepare',
      'fingerprint',
      'commit rounds',
    ]);
  });
});
