/**
 * The chain's relay, the handler of the outbox table's stream: each new outbox item is published
 * to the shipping queue with the event id as its `idempotency-key` attribute; an item that is
 * not an outbox event goes to the dead-letter queue with its reason. The `Outbox` construct sets
 * the variables it reads.
 */
import { SQSClient } from '@aws-sdk/client-sqs';
import { createSqsDeadLetterSender, ENV } from 'effectively-once';
import { createOutboxRelay, OUTBOX_ENV, sqsDestination } from 'effectively-once/outbox';

const sqs = new SQSClient({});

export const handler = createOutboxRelay({
  destination: sqsDestination({ client: sqs, queueUrl: process.env[OUTBOX_ENV.destinationQueueUrl]! }),
  deadLetter: createSqsDeadLetterSender({ client: sqs, queueUrl: process.env[ENV.deadLetterQueueUrl]! }),
  name: process.env[ENV.consumer]!,
});
