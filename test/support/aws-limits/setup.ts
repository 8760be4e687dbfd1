/**
 * Setup file of the integration and reliability projects: every `SQSClient` in the test process
 * (the tests' own, and the ones the code under test creates, such as the default dead-letter
 * sender of `EO_DEAD_LETTER_QUEUE_URL`) sends through the SQS conformance layer, so a message
 * AWS would refuse fails the test although the emulator accepts it. A queue's own
 * `MaximumMessageSize` and `ContentBasedDeduplication` are learned from the `CreateQueue` and
 * `SetQueueAttributes` requests the process makes.
 */
import { CreateQueueCommand, SetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs';
import type { Send } from './intercept';
import { type ConformingSqsClientOptions, createConformingSqsClient } from './sqs';

type QueueAttributes = NonNullable<ConformingSqsClientOptions['queues']>[string];

const MARK = Symbol.for('effectively-once.sqs-conformance');
/** What the process told SQS of its queues, by URL (read at every send). */
const queues: Record<string, QueueAttributes> = {};

/** The limits of `attributes` that change what SQS accepts (`undefined` fields left out). */
function limitsOf(attributes: Record<string, string> | undefined): QueueAttributes {
  const size = attributes?.MaximumMessageSize;
  const dedup = attributes?.ContentBasedDeduplication;
  return {
    ...(size === undefined ? {} : { maximumMessageSize: Number(size) }),
    ...(dedup === undefined ? {} : { contentBasedDeduplication: dedup === 'true' }),
  };
}

const prototype = SQSClient.prototype as unknown as { send: Send & { [MARK]?: true } };
if (prototype.send[MARK] !== true) {
  const original = prototype.send;
  const conforming: Send & { [MARK]?: true } = async function (this: SQSClient, command, ...rest) {
    const client = createConformingSqsClient(
      { send: (inner: unknown, ...more: unknown[]) => original.call(this, inner, ...more) },
      { queues },
    );
    const output = await (client.send as Send)(command, ...rest);
    if (command instanceof CreateQueueCommand) {
      const url = (output as { QueueUrl?: string }).QueueUrl;
      if (url !== undefined) queues[url] = limitsOf(command.input.Attributes);
    } else if (command instanceof SetQueueAttributesCommand && command.input.QueueUrl !== undefined) {
      const url = command.input.QueueUrl;
      queues[url] = { ...queues[url], ...limitsOf(command.input.Attributes) };
    }
    return output;
  };
  conforming[MARK] = true;
  prototype.send = conforming;
}
