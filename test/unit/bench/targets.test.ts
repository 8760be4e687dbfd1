import { describe, expect, it } from 'vitest';
import { evaluateTargets, FEATURE_MISSING, type TargetInputs } from '../../../bench/report/targets';

const interval = (median: number, ciHigh: number) => ({
  median,
  ciLow: median - 0.05,
  ciHigh,
  method: 'test',
});

const inputs: TargetInputs = {
  toolkitRows: ['marker', 'atomic', 'entity', 'two-phase'],
  featureRows: {},
  sameCalls: {
    marker: 'manual-marker',
    atomic: 'manual-atomic',
    entity: 'manual-entity',
    'two-phase': undefined,
  },
  toolkitRequests: {
    marker: { first: 1, duplicate: 1 },
    atomic: { first: 1, duplicate: 1 },
    entity: { first: 1, duplicate: 1 },
    'two-phase': { first: 2, duplicate: 1 },
  },
  requests: {
    marker: { first: 2, duplicate: 1 },
    atomic: { first: 1, duplicate: 1 },
    entity: { first: 1, duplicate: 1 },
    'two-phase': { first: 3, duplicate: 1 },
    powertools: { first: 3, duplicate: 1 },
  },
  writeUnits: {
    marker: { first: 2, duplicate: 1 },
    atomic: { first: 4, duplicate: 2 },
    entity: { first: 1, duplicate: 1 },
    'two-phase': { first: 3, duplicate: 1 },
  },
  latencyP50: {
    marker: 22,
    'manual-marker': 22,
    atomic: 57,
    'manual-atomic': 50,
    entity: 12.3,
    'manual-entity': 12.3,
    'two-phase': 31.4,
    powertools: 31.4,
  },
  dollarsFirst: { marker: 1.8, entity: 1.16, atomic: 3.18, powertools: 2.47 },
  cpuRatioVsSameCalls: { marker: interval(1.0, 1.08), atomic: interval(1.02, 1.2) },
  initAddedMillis: { marker: 3, atomic: -2, entity: 40, 'two-phase': 5 },
  initNoiseBandMillis: 10,
  peer: 'powertools',
};

const find = (id: string, subject: string) => {
  const target = evaluateTargets(inputs).find((result) => result.id === id && result.subject === subject);
  if (!target) throw new Error(`no ${id} target for ${subject}`);
  return target;
};

describe('bench targets', () => {
  it('judges requests and write units against each mode’s floor', () => {
    expect(find('floor', 'marker')).toMatchObject({ met: true });
    expect(find('floor', 'atomic')).toMatchObject({
      met: true,
      verdict: 'met: 1 request(s) and 4 WRU first, 1 and 2 duplicate',
    });
    expect(find('floor', 'two-phase').met).toBe(true);
  });

  it('reports the targets of features not in this build as not measured, never dropped', () => {
    expect(find('floor', 'atomic-marker-on-item')).toMatchObject({ met: null, verdict: FEATURE_MISSING });
    expect(find('dollars-vs-peer', 'atomic-marker-on-item')).toMatchObject({
      met: null,
      verdict: FEATURE_MISSING,
    });
    expect(find('cache-duplicate', 'completed-record cache')).toMatchObject({
      met: null,
      verdict: FEATURE_MISSING,
    });
  });

  it('judges a feature row once the build has one', () => {
    const targets = evaluateTargets({
      ...inputs,
      toolkitRows: [...inputs.toolkitRows, 'entity-cached'],
      featureRows: { 'completed-record-cache': 'entity-cached' },
      requests: { ...inputs.requests, 'entity-cached': { first: 1, duplicate: 0 } },
    });
    expect(targets.find((target) => target.id === 'cache-duplicate')).toMatchObject({
      subject: 'entity-cached',
      met: true,
      verdict: 'met: 0 requests per duplicate',
    });
  });

  it('judges modelled latency against the same calls within 5%, with the margin', () => {
    expect(find('latency-vs-same-calls', 'marker')).toMatchObject({
      met: true,
      verdict: 'met: 1.00x (limit <= 1.05x, 5% under the limit)',
    });
    expect(find('latency-vs-same-calls', 'atomic')).toMatchObject({
      met: false,
      verdict: 'missed: 1.14x (limit <= 1.05x, 9% over the limit)',
    });
    expect(find('latency-vs-same-calls', 'two-phase')).toMatchObject({
      met: null,
      verdict: 'not measured: no hand-written baseline makes these calls',
    });
  });

  it('compares latency with the peer only in modes making fewer requests, and says so otherwise', () => {
    expect(find('latency-vs-peer', 'entity')).toMatchObject({
      met: true,
      verdict: 'met: 12.3 ms (limit < 31.4 ms, 61% under the limit)',
    });
    expect(find('latency-vs-peer', 'atomic').met).toBe(false);
    expect(find('latency-vs-peer', 'two-phase')).toMatchObject({
      met: null,
      verdict:
        'not applicable: 3 requests per first delivery, as many as powertools (3); modelled p50 31.4 ms against 31.4 ms',
    });
  });

  it('judges dollars per million first deliveries below the peer in marker and entity mode', () => {
    expect(find('dollars-vs-peer', 'marker')).toMatchObject({
      met: true,
      verdict: 'met: $1.800 (limit < $2.470, 27% under the limit)',
    });
    expect(find('dollars-vs-peer', 'entity').met).toBe(true);
  });

  it('judges CPU on the upper end of its interval, and init time against the noise band', () => {
    expect(find('cpu-vs-same-calls', 'marker')).toMatchObject({
      met: true,
      verdict: 'met: 1.08x (limit <= 1.10x, 2% under the limit); median 1.00x, interval 0.95x–1.08x',
    });
    expect(find('cpu-vs-same-calls', 'atomic').met).toBe(false);
    expect(find('cpu-vs-same-calls', 'entity').verdict).toBe(
      'not measured: no hand-written baseline makes these calls',
    );
    expect(find('init-vs-noise', 'marker').met).toBe(true);
    expect(find('init-vs-noise', 'atomic')).toMatchObject({
      met: true,
      verdict: 'met: -2.0 ms (faster than the bare handler; noise band 10.0 ms)',
    });
    expect(find('init-vs-noise', 'entity')).toMatchObject({
      met: false,
      verdict: 'missed: 40.0 ms (limit <= 10.0 ms, 300% over the limit)',
    });
  });

  it('meets the floor with fewer requests per message than it, when a batch shares one', () => {
    const targets = evaluateTargets({
      ...inputs,
      toolkitRequests: { ...inputs.toolkitRequests, atomic: { first: 0.1, duplicate: 0.1 } },
    });
    expect(targets.find((target) => target.id === 'floor' && target.subject === 'atomic')).toMatchObject({
      met: true,
      verdict: 'met: 0.10 request(s) and 4 WRU first, 0.10 and 2 duplicate',
    });
  });

  it('judges atomic’s default configuration on p50 at or below the peer’s and p99 under 142 ms', () => {
    const judged = (p50: number, p99: number) =>
      evaluateTargets({
        ...inputs,
        atomicDefault: 'atomic',
        latencyP50: { ...inputs.latencyP50, atomic: p50 },
        latencyP99: { atomic: p99 },
      })
        .filter((target) => target.id === 'atomic-default-latency')
        .map((target) => target.verdict);
    expect(judged(30.5, 97.6)).toEqual([
      'met: 30.5 ms (limit <= 31.4 ms, 3% under the limit)',
      'met: 97.6 ms (limit < 142.0 ms, 31% under the limit)',
    ]);
    expect(judged(57, 141.7)).toEqual([
      'missed: 57.0 ms (limit <= 31.4 ms, 82% over the limit)',
      'met: 141.7 ms (limit < 142.0 ms, 0% under the limit)',
    ]);
    expect(evaluateTargets(inputs).some((target) => target.id === 'atomic-default-latency')).toBe(false);
  });

  it('holds every row reported to its dollars before batch commit, and says where there is none', () => {
    const targets = evaluateTargets({
      ...inputs,
      dollarRows: ['atomic', 'atomic-message', 'powertools'],
      dollarsFirst: { ...inputs.dollarsFirst, 'atomic-message': 3.2 },
      dollarsFirstBefore: { atomic: 3.181, powertools: 2.47 },
    }).filter((target) => target.id === 'dollars-vs-before');
    expect(targets.map(({ subject, met, verdict }) => ({ subject, met, verdict }))).toEqual([
      { subject: 'atomic', met: true, verdict: 'met: $3.180 (limit <= $3.181, 0% under the limit)' },
      {
        subject: 'atomic-message',
        met: null,
        verdict: 'not measured: no figure before (now $3.200)',
      },
      { subject: 'powertools', met: true, verdict: 'met: $2.470 (limit <= $2.470, 0% under the limit)' },
    ]);
  });
});
