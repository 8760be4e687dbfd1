/**
 * Reading a real Kafka topic back in Lambda's event form, and playing the records through a
 * Kafka handler with the event source's semantics: batches per partition, each partition resumed
 * at the offset the handler's response names.
 */
import { randomBytes } from 'node:crypto';
import type { KafkaEvent, KafkaHandler, KafkaRecord } from 'effectively-once/kafka';
import type { IHeaders, Kafka } from 'kafkajs';
import { captureStdout, lambdaContext } from './fixtures';

/** Lambda's form of a kafkajs header value: its bytes as numbers. */
function headerList(headers: IHeaders | undefined): KafkaRecord['headers'] {
  return Object.entries(headers ?? {}).flatMap(([name, value]) =>
    [value]
      .flat()
      .filter((one) => one !== undefined)
      .map((one) => ({ [name]: [...Buffer.from(one as Buffer | string)] })),
  );
}

/** Reads every record of the topic from the start with a new consumer group, in Lambda's form. */
export async function readTopic(
  kafka: Kafka,
  topic: string,
  expected: number,
): Promise<Map<string, KafkaRecord[]>> {
  const consumer = kafka.consumer({ groupId: `reader-${randomBytes(3).toString('hex')}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const byPartition = new Map<string, KafkaRecord[]>();
  let count = 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`read ${count} of ${expected} records`)), 60_000);
    void consumer.run({
      eachMessage: async ({ partition, message }) => {
        const key = `${topic}-${partition}`;
        const list = byPartition.get(key) ?? [];
        list.push({
          topic,
          partition,
          offset: Number(message.offset),
          timestamp: Number(message.timestamp),
          timestampType: 'CREATE_TIME',
          key: message.key === null ? null : message.key.toString('base64'),
          value: message.value === null ? null : message.value.toString('base64'),
          headers: headerList(message.headers),
        });
        byPartition.set(key, list);
        count += 1;
        if (count === expected) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  for (const list of byPartition.values()) list.sort((a, b) => a.offset - b.offset);
  return byPartition;
}

/**
 * Drives `handler` over the partitions as the Kafka event source does: batches of three records
 * per partition, each partition resumed at the offset the response names; `afterFirst` runs once
 * after the first invocation. Returns the invocations' responses.
 */
export async function play(
  handler: KafkaHandler,
  partitions: Map<string, KafkaRecord[]>,
  options: { readonly bootstrapServers: string; readonly afterFirst?: () => Promise<void> },
): Promise<KafkaEvent[]> {
  const position = new Map([...partitions.keys()].map((key) => [key, 0]));
  const events: KafkaEvent[] = [];
  for (let invocation = 0; invocation < 20; invocation++) {
    const records: Record<string, KafkaRecord[]> = {};
    for (const [key, list] of partitions) {
      const batch = list.slice(position.get(key)!, position.get(key)! + 3);
      if (batch.length > 0) records[key] = batch;
    }
    if (Object.keys(records).length === 0) return events;
    const event: KafkaEvent = {
      eventSource: 'SelfManagedKafka',
      bootstrapServers: options.bootstrapServers,
      records,
    };
    events.push(event);
    const { result } = await captureStdout(() => handler(event, lambdaContext()));
    const resumeAt = new Map(
      result.batchItemFailures.map(({ itemIdentifier }) => [itemIdentifier.partition, itemIdentifier.offset]),
    );
    for (const [key, batch] of Object.entries(records)) {
      const offset = resumeAt.get(key);
      const list = partitions.get(key)!;
      position.set(
        key,
        offset === undefined ? position.get(key)! + batch.length : list.findIndex((r) => r.offset === offset),
      );
    }
    if (invocation === 0) await options.afterFirst?.();
  }
  throw new Error('The partitions did not drain in 20 invocations');
}
