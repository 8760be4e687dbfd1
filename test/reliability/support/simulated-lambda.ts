/**
 * What every simulation's Lambda instances hand the real handler besides their client: a
 * dead-letter sender that keeps what it sent, and a metrics sink that can crash the invocation
 * while it builds its batch response; and the request fault each claim fault stands for. Each
 * simulation keeps its own invocation type; these need only what {@link SimulatedInvocation}
 * names.
 */

import type { MetricsSink, OutcomeCounts } from '../../../lambda/core/metrics';
import type { DeadLetterMessage, DeadLetterSender } from '../../../lambda/dead-letter/dead-letter-message';
import { type RequestFault, SimulatedCrash } from './fault-injection';
import { chanceOf } from './prng';

/** What the shared fakes read of the invocation running now. */
export interface SimulatedInvocation {
  /** Faults are injected into this invocation. */
  readonly faults: boolean;
  /** It crashes while its batch response is built (at the metrics sink, called just before). */
  readonly responseCrash: boolean;
  /** It crashed: nothing of it reaches anything any more. */
  readonly crashed: boolean;
}

/** Options of {@link createCapturingDeadLetterSender}. */
export interface CapturingDeadLetterSenderOptions<TInvocation extends SimulatedInvocation> {
  readonly seed: number;
  /** Labels that draw a send's failure, before the message id and its delivery count. */
  readonly labels: readonly string[];
  /** The invocation sending now, if any. */
  readonly current: () => TInvocation | undefined;
  /** How often the invocation's message had been delivered, this delivery included. */
  readonly deliveryOf: (invocation: TInvocation, sourceMessageId: string) => number;
  /** Where the sent dead letters go. */
  readonly sent: Pick<DeadLetterMessage[], 'push'>;
}

/**
 * A dead-letter sender that keeps every message it sent; a crashed invocation's send is refused,
 * and in an invocation with faults one send in ten fails (drawn per message and delivery).
 */
export function createCapturingDeadLetterSender<TInvocation extends SimulatedInvocation>(
  options: CapturingDeadLetterSenderOptions<TInvocation>,
): DeadLetterSender {
  const { seed, labels, current, deliveryOf, sent } = options;
  return {
    async send(message) {
      const invocation = current();
      if (invocation?.crashed) throw new SimulatedCrash('dead-letter send refused: the invocation crashed');
      const delivery = invocation === undefined ? 0 : deliveryOf(invocation, message.sourceMessageId);
      if (invocation?.faults && chanceOf(seed, ...labels, message.sourceMessageId, delivery) < 0.1) {
        throw new Error('SendMessage to the dead-letter queue failed (injected)');
      }
      sent.push(message);
    },
  };
}

/** Options of {@link createCrashingMetrics}. */
export interface CrashingMetricsOptions<TInvocation extends SimulatedInvocation> {
  /** The invocation publishing now, if any. */
  readonly current: () => TInvocation | undefined;
  /** Marks the invocation crashed (and counts the crash point) before the sink throws. */
  readonly crash: (invocation: TInvocation) => void;
  /** Sees every invocation's counts first. @default none */
  readonly onPublish?: (counts: OutcomeCounts) => void;
}

/**
 * A metrics sink that crashes an invocation drawn to crash while its batch response is built:
 * the handler publishes its counts just before it returns the response.
 */
export function createCrashingMetrics<TInvocation extends SimulatedInvocation>(
  options: CrashingMetricsOptions<TInvocation>,
): MetricsSink {
  return {
    publish(counts) {
      options.onPublish?.(counts);
      const invocation = options.current();
      if (invocation?.responseCrash && !invocation.crashed) {
        options.crash(invocation);
        throw new SimulatedCrash('crashed while building the batch response');
      }
    },
  };
}

/**
 * The fault `roll` (a number in [0, 1), from `chanceOf`) draws from `table`: each fault takes
 * its chance of the range in turn, the rest draws none.
 */
export function drawFault<TFault>(
  table: readonly (readonly [TFault, number])[],
  roll: number,
): TFault | undefined {
  let rest = roll;
  for (const [fault, chance] of table) {
    if (rest < chance) return fault;
    rest -= chance;
  }
  return undefined;
}

/** The faults of a claim (or commit, or entity put) the simulations draw alike. */
export type ClaimFault =
  | 'throttle'
  | 'throttle-after-applied'
  | 'conflict'
  | 'lost-response'
  | 'lost-response-retried'
  | 'late-duplicate'
  | 'crash-before-claim'
  | 'crash-after-claim';

/**
 * The request fault a claim fault stands for (see `RequestFault`), crashing at the points the
 * simulation counts as `crashPoints`; `undefined` for any other fault of the delivery.
 */
export function claimRequestFault(
  fault: string | undefined,
  crashPoints: { readonly before: string; readonly after: string },
): RequestFault | undefined {
  switch (fault as ClaimFault | undefined) {
    case 'throttle':
      return { kind: 'throttle' };
    case 'throttle-after-applied':
      return { kind: 'throttle', applied: true };
    case 'conflict':
      return { kind: 'conflict' };
    case 'lost-response':
      return { kind: 'lost-response' };
    case 'lost-response-retried':
      return { kind: 'lost-response-retried' };
    case 'late-duplicate':
      return { kind: 'late-duplicate' };
    case 'crash-before-claim':
      return { kind: 'crash-before', label: crashPoints.before };
    case 'crash-after-claim':
      return { kind: 'crash-after', label: crashPoints.after };
    default:
      return undefined;
  }
}

/** True for a claim fault that loses the claim's response (the suites count lost responses). */
export function losesResponse(fault: string | undefined): boolean {
  return fault === 'lost-response' || fault === 'lost-response-retried' || fault === 'late-duplicate';
}

/** True for a request fault that loses a claim's response (see {@link losesResponse}). */
export function losesClaimResponse(fault: RequestFault): boolean {
  return losesResponse(fault.kind);
}
