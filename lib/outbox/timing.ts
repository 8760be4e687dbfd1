/**
 * The retention of outbox items, derived from the relay's settings before anything is created.
 * Pure over the props, so the validation can check an explicit `retention` against it.
 */
import { Duration } from 'aws-cdk-lib';
import { isKnownNumber } from '../consumer-validation';
import {
  DEFAULT_RELAY_MAX_RECORD_AGE,
  DEFAULT_RELAY_RETRY_ATTEMPTS,
  DEFAULT_RELAY_TIMEOUT,
  OPERATOR_ALLOWANCE,
  OUTBOX_STREAM_RETENTION,
} from './defaults';

/** What the outbox retention is derived from; every duration concrete (no tokens). */
export interface OutboxRetentionInputs {
  /** The oldest record the relay's event source delivers (`maxRecordAge`). */
  readonly maxRecordAge: Duration;
  /** How often the event source retries a failing batch (`retryAttempts`). */
  readonly retryAttempts: number;
  /** The relay function's timeout: the longest one attempt takes. */
  readonly relayTimeout: Duration;
}

/** The derived retention with the terms it is made of. */
export interface OutboxRetention {
  /** How long after its write the relay can still be publishing an event. */
  readonly giveUpHorizon: Duration;
  /** `OUTBOX_STREAM_RETENTION + giveUpHorizon + OPERATOR_ALLOWANCE`. */
  readonly retention: Duration;
  /** One line naming each term, for warnings and docs. */
  readonly explanation: string;
}

/**
 * Derives how long an outbox item lives:
 *
 * `retention = 24 h (stream retention) + min(maxRecordAge, (retryAttempts + 1) × relayTimeout) + 1 day`
 *
 * The relay reads the stream, not the table, so the item is what is left once the stream no
 * longer holds its record. The relay stops trying an event when the event source gives up on
 * it: after `maxRecordAge`, or after `retryAttempts` retries of at most one timeout each,
 * whichever comes first (the give-up horizon). The batch then goes to the on-failure
 * destination, which names a sequence number range that the stream keeps for 24 hours at
 * most; the item must outlive both, plus a day for an operator to republish it from the table.
 */
export function deriveOutboxRetention(inputs: OutboxRetentionInputs): OutboxRetention {
  const attemptsSeconds = (inputs.retryAttempts + 1) * inputs.relayTimeout.toSeconds();
  const giveUpSeconds = Math.min(inputs.maxRecordAge.toSeconds(), attemptsSeconds);
  const retentionSeconds =
    OUTBOX_STREAM_RETENTION.toSeconds() + giveUpSeconds + OPERATOR_ALLOWANCE.toSeconds();
  const giveUpHorizon = Duration.seconds(giveUpSeconds);
  return {
    giveUpHorizon,
    retention: Duration.seconds(retentionSeconds),
    explanation: `stream retention ${OUTBOX_STREAM_RETENTION.toHumanString()} + relay give-up horizon ${giveUpHorizon.toHumanString()} (the shorter of maxRecordAge and (retryAttempts + 1) × relay timeout) + operator allowance ${OPERATOR_ALLOWANCE.toHumanString()}`,
  };
}

/** The props the retention is derived from (a token counts as its default: the retention errs long). */
export interface OutboxTimingProps {
  readonly maxRecordAge?: Duration;
  readonly retryAttempts?: number;
  readonly relayTimeout?: Duration;
  readonly retention?: Duration;
}

/** The relay's durations and the retention the outbox applies: `retention`, or the derived one. */
export interface OutboxTiming {
  readonly maxRecordAge: Duration;
  readonly relayTimeout: Duration;
  readonly derived: OutboxRetention;
  readonly retention: Duration;
}

/** Resolves the relay's durations and the retention from `props`. */
export function resolveOutboxTiming(props: OutboxTimingProps): OutboxTiming {
  const maxRecordAge = props.maxRecordAge ?? DEFAULT_RELAY_MAX_RECORD_AGE;
  const relayTimeout = props.relayTimeout ?? DEFAULT_RELAY_TIMEOUT;
  const retryAttempts = props.retryAttempts ?? DEFAULT_RELAY_RETRY_ATTEMPTS;
  const derived = deriveOutboxRetention({
    maxRecordAge: maxRecordAge.isUnresolved() ? DEFAULT_RELAY_MAX_RECORD_AGE : maxRecordAge,
    retryAttempts:
      isKnownNumber(retryAttempts) && retryAttempts >= 0 ? retryAttempts : DEFAULT_RELAY_RETRY_ATTEMPTS,
    relayTimeout: relayTimeout.isUnresolved() ? DEFAULT_RELAY_TIMEOUT : relayTimeout,
  });
  return { maxRecordAge, relayTimeout, derived, retention: props.retention ?? derived.retention };
}
