/**
 * The integration project's SQS conformance layer is in force: a plain `SQSClient`, as the code
 * under test creates one, refuses what AWS refuses although the emulator accepts it.
 */
import { SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { awsConfig } from '../support/aws';
import { createLocalResources } from '../support/fixtures';

const local = createLocalResources();
let standardUrl: string;
let smallUrl: string;
let fifoUrl: string;

beforeAll(async () => {
  standardUrl = (await local.createQueue('eo-conformance')).url;
  smallUrl = (await local.createQueue('eo-conformance-small', { MaximumMessageSize: '1024' })).url;
  fifoUrl = (await local.createQueue('eo-conformance', { FifoQueue: 'true' })).url;
});
afterAll(() => local.dispose());

describe('SQS conformance in integration tests', () => {
  const sqs = new SQSClient(awsConfig());

  it('refuses a body over 1 MiB, and over a queue’s own MaximumMessageSize, with InvalidParameterValue', async () => {
    await expect(
      sqs.send(new SendMessageCommand({ QueueUrl: standardUrl, MessageBody: 'x'.repeat(1_048_577) })),
    ).rejects.toMatchObject({ name: 'InvalidParameterValue' });
    await expect(
      sqs.send(new SendMessageCommand({ QueueUrl: smallUrl, MessageBody: 'x'.repeat(1025) })),
    ).rejects.toMatchObject({ name: 'InvalidParameterValue' });
    await expect(
      sqs.send(new SendMessageCommand({ QueueUrl: smallUrl, MessageBody: 'x'.repeat(1024) })),
    ).resolves.toMatchObject({ MessageId: expect.any(String) });
  });

  it('refuses a FIFO message group id with a space, which the emulator accepts', async () => {
    await expect(
      sqs.send(
        new SendMessageCommand({
          QueueUrl: fifoUrl,
          MessageBody: 'x',
          MessageGroupId: 'group one',
          MessageDeduplicationId: 'd-1',
        }),
      ),
    ).rejects.toMatchObject({ name: 'InvalidParameterValue' });
  });

  it('refuses the same group id on a standard queue, where a group id makes it a fair queue', async () => {
    // "The length of MessageGroupId is 128 characters. Valid values: alphanumeric characters and
    // punctuation" (API_SendMessage.html), stated for standard queues as for FIFO ones.
    await expect(
      sqs.send(
        new SendMessageCommand({ QueueUrl: standardUrl, MessageBody: 'x', MessageGroupId: 'group one' }),
      ),
    ).rejects.toMatchObject({ name: 'InvalidParameterValue' });
    await expect(
      sqs.send(
        new SendMessageCommand({ QueueUrl: standardUrl, MessageBody: 'x', MessageGroupId: 'group-one' }),
      ),
    ).resolves.toMatchObject({ MessageId: expect.any(String) });
  });
});
