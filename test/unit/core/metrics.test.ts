import { describe, expect, it } from 'vitest';
import { METRICS } from '../../../lambda/core/contract';
import { createEmfMetricsSink, createOutcomeCounts } from '../../../lambda/core/metrics';

describe('outcome counts', () => {
  it('start at zero for every metric of the contract, in its order (the order of the metrics line)', () => {
    expect(Object.entries(createOutcomeCounts())).toEqual(Object.keys(METRICS).map((name) => [name, 0]));
  });

  it('are a new object for every invocation', () => {
    const first = createOutcomeCounts();
    first.processed += 1;

    expect(createOutcomeCounts().processed).toBe(0);
  });
});

describe('the Embedded Metric Format sink', () => {
  it('writes the invocation’s request id as a property, never as a dimension', () => {
    const lines: string[] = [];
    const sink = createEmfMetricsSink({ namespace: 'Shop', write: (line) => lines.push(line) });

    sink.publish(
      { ...createOutcomeCounts(), processed: 2 },
      { consumer: 'orders', timestampMillis: 1, requestId: 'req-1' },
    );
    sink.publish(createOutcomeCounts(), { consumer: 'orders', timestampMillis: 2 });

    const [first, second] = lines.map((line) => JSON.parse(line));
    expect(first._aws.CloudWatchMetrics[0].Dimensions).toEqual([['Consumer']]);
    expect({ requestId: first.requestId, consumer: first.Consumer, processed: first.Processed }).toEqual({
      requestId: 'req-1',
      consumer: 'orders',
      processed: 2,
    });
    expect(second).not.toHaveProperty('requestId');
  });
});
