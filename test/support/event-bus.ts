/**
 * An EventBridge bus on the emulator whose one rule delivers the events a pattern matches to an
 * SQS queue, as a receiving service subscribes to an outbox's bus.
 */
import {
  CreateEventBusCommand,
  DeleteEventBusCommand,
  DeleteRuleCommand,
  type EventBridgeClient,
  PutRuleCommand,
  PutTargetsCommand,
  RemoveTargetsCommand,
} from '@aws-sdk/client-eventbridge';
import { uniqueName } from './aws';

/** The bus, and how to remove it with its rule and target. */
export interface BusToQueue {
  readonly busName: string;
  readonly busArn: string;
  /** Removes the target, the rule and the bus. */
  remove(): Promise<void>;
}

/** Creates a bus named from `prefix` and a rule sending what `eventPattern` matches to `queueArn`. */
export async function createBusToQueue(
  eventBridge: EventBridgeClient,
  prefix: string,
  eventPattern: Record<string, unknown>,
  queueArn: string,
): Promise<BusToQueue> {
  const busName = uniqueName(prefix);
  const { EventBusArn } = await eventBridge.send(new CreateEventBusCommand({ Name: busName }));
  const ruleName = uniqueName(`${prefix}-rule`);
  await eventBridge.send(
    new PutRuleCommand({ Name: ruleName, EventBusName: busName, EventPattern: JSON.stringify(eventPattern) }),
  );
  await eventBridge.send(
    new PutTargetsCommand({
      Rule: ruleName,
      EventBusName: busName,
      Targets: [{ Id: 'queue', Arn: queueArn }],
    }),
  );
  return {
    busName,
    busArn: EventBusArn!,
    async remove() {
      await eventBridge.send(
        new RemoveTargetsCommand({ Rule: ruleName, EventBusName: busName, Ids: ['queue'] }),
      );
      await eventBridge.send(new DeleteRuleCommand({ Name: ruleName, EventBusName: busName }));
      await eventBridge.send(new DeleteEventBusCommand({ Name: busName }));
    },
  };
}
