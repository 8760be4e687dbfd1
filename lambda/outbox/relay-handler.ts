/**
 * The outbox relay the package ships: the `Outbox` construct's default `relayEntry`. Everything
 * it needs comes from the variables the construct sets on the relay function (see
 * `createOutboxRelay` and `outboxDestinationFromEnvironment`): the destination
 * (`EO_OUTBOX_DESTINATION_*`, `EO_OUTBOX_EVENT_SOURCE`), its name (`EO_CONSUMER`), the
 * dead-letter queue (`EO_DEAD_LETTER_QUEUE_URL`), the log level and the metric namespace. A
 * missing or malformed variable fails the cold start with `INVALID_OPTIONS` naming it. Lambda
 * passes the context, so the relay returns its checkpoint at the deadline margin instead of
 * being killed mid-batch.
 */
import { createOutboxRelay } from './outbox-relay';

/** The relay's Lambda handler, configured once per cold start from the construct's environment. */
export const handler = createOutboxRelay();
