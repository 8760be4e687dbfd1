/**
 * An SNS topic's SQS subscription on the emulator with raw message delivery, as a receiving
 * service subscribes its queue to an outbox's topic: the message attributes arrive as SQS
 * message attributes and the body is the published `Message`.
 */
import { type SNSClient, SubscribeCommand } from '@aws-sdk/client-sns';

/** Subscribes the queue at `queueArn` to `topicArn` with `RawMessageDelivery`. */
export async function subscribeQueueRaw(sns: SNSClient, topicArn: string, queueArn: string): Promise<void> {
  await sns.send(
    new SubscribeCommand({
      TopicArn: topicArn,
      Protocol: 'sqs',
      Endpoint: queueArn,
      Attributes: { RawMessageDelivery: 'true' },
    }),
  );
}
