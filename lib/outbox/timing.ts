/**
 * The retention of outbox items, derived from the relay's settings before anything is created.
 * Pure over the props, so the validation can check an explicit `retention` against it.
 */
import { Duration } from 'aws-cdk-lib';
import { isKnownNumber } from '../consumer-validation';
import {
  DEFAULT_ON_FAILURE_RETENTION,
  DEFAULT_RELAY_MAX_RECORD_AGE,
  DEFAULT_RELAY_RETRY_ATTEMPTS,
  DEFAULT_RELAY_TIMEOUT,
  MAX_ON_FAILURE_RETENTION,
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
  /** How long the on-failure queue keeps the record of a batch given up on (`onFailureRetention`). */
  readonly onFailureRetention: Duration;
}

/** The derived retention with the terms it is made of. */
export interface OutboxRetention {
  /** How long after its write the relay can still be publishing an event. */
  readonly giveUpHorizon: Duration;
  /**
   * `OUTBOX_STREAM_RETENTION + giveUpHorizon + OPERATOR_ALLOWANCE`: the least an item lives, so an
   * operator can republish it once the stream no longer holds it.
   */
  readonly floor: Duration;
  /**
   * `giveUpHorizon + onFailureRetention`: the latest an on-failure record naming the event can
   * still be acted upon.
   */
  readonly onFailureHorizon: Duration;
  /** The longer of `floor` and `onFailureHorizon`. */
  readonly retention: Duration;
  /** One line naming each term, for warnings and docs. */
  readonly explanation: string;
}

/**
 * Derives how long an outbox item lives, from everything that can still ask for the event:
 *
 * `retention = max(24 h + G + 1 day, G + onFailureRetention)`, where
 * `G = min(maxRecordAge, (retryAttempts + 1) × relayTimeout)`
 *
 * The relay stops trying an event when the event source gives up on it: after `maxRecordAge`,
 * or after `retryAttempts` retries of at most one timeout each, whichever comes first (the
 * give-up horizon G). The batch then goes to the on-failure queue, whose record describes the
 * batch only (shard, sequence number range, arrival times), never the events: the table is
 * where the operator finds them, for as long as that record waits (`onFailureRetention`), so
 * the item must outlive `G + onFailureRetention`. It never lives less than the stream's 24 hours
 * + G + a day for an operator to republish it (the floor). With the defaults that is
 * max(24 h + 12 h + 1 day, 12 h + 4 days) = 4 days 12 hours (108 hours). The dead-letter queue
 * does not count: a dead letter carries the whole event.
 */
export function deriveOutboxRetention(inputs: OutboxRetentionInputs): OutboxRetention {
  const attemptsSeconds = (inputs.retryAttempts + 1) * inputs.relayTimeout.toSeconds();
  const giveUpSeconds = Math.min(inputs.maxRecordAge.toSeconds(), attemptsSeconds);
  const floorSeconds = OUTBOX_STREAM_RETENTION.toSeconds() + giveUpSeconds + OPERATOR_ALLOWANCE.toSeconds();
  const onFailureSeconds = giveUpSeconds + inputs.onFailureRetention.toSeconds();
  const giveUpHorizon = Duration.seconds(giveUpSeconds);
  const floor = Duration.seconds(floorSeconds);
  const onFailureHorizon = Duration.seconds(onFailureSeconds);
  const g = giveUpHorizon.toHumanString();
  return {
    giveUpHorizon,
    floor,
    onFailureHorizon,
    retention: Duration.seconds(Math.max(floorSeconds, onFailureSeconds)),
    explanation: `the longer of stream retention ${OUTBOX_STREAM_RETENTION.toHumanString()} + relay give-up horizon ${g} (the shorter of maxRecordAge and (retryAttempts + 1) × relay timeout) + operator allowance ${OPERATOR_ALLOWANCE.toHumanString()} = ${floor.toHumanString()}, and relay give-up horizon ${g} + on-failure queue retention ${inputs.onFailureRetention.toHumanString()} = ${onFailureHorizon.toHumanString()}`,
  };
}

/**
 * The props the retention is derived from (a token counts as its default, an on-failure
 * retention as SQS's longest: the retention errs long).
 */
export interface OutboxTimingProps {
  readonly maxRecordAge?: Duration;
  readonly retryAttempts?: number;
  readonly relayTimeout?: Duration;
  readonly onFailureRetention?: Duration;
  readonly retention?: Duration;
}

/** The relay's durations and the retention the outbox applies: `retention`, or the derived one. */
export interface OutboxTiming {
  readonly maxRecordAge: Duration;
  readonly relayTimeout: Duration;
  readonly onFailureRetention: Duration;
  readonly derived: OutboxRetention;
  readonly retention: Duration;
}

/** Resolves the relay's durations and the retention from `props`. */
export function resolveOutboxTiming(props: OutboxTimingProps): OutboxTiming {
  const maxRecordAge = props.maxRecordAge ?? DEFAULT_RELAY_MAX_RECORD_AGE;
  const relayTimeout = props.relayTimeout ?? DEFAULT_RELAY_TIMEOUT;
  const retryAttempts = props.retryAttempts ?? DEFAULT_RELAY_RETRY_ATTEMPTS;
  const onFailureRetention = props.onFailureRetention ?? DEFAULT_ON_FAILURE_RETENTION;
  const derived = deriveOutboxRetention({
    maxRecordAge: maxRecordAge.isUnresolved() ? DEFAULT_RELAY_MAX_RECORD_AGE : maxRecordAge,
    retryAttempts:
      isKnownNumber(retryAttempts) && retryAttempts >= 0 ? retryAttempts : DEFAULT_RELAY_RETRY_ATTEMPTS,
    relayTimeout: relayTimeout.isUnresolved() ? DEFAULT_RELAY_TIMEOUT : relayTimeout,
    // An unknown queue retention counts as SQS's longest, so the item errs long.
    onFailureRetention: onFailureRetention.isUnresolved() ? MAX_ON_FAILURE_RETENTION : onFailureRetention,
  });
  return {
    maxRecordAge,
    relayTimeout,
    onFailureRetention,
    derived,
    retention: props.retention ?? derived.retention,
  };
}
