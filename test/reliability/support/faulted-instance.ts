/**
 * One simulated Lambda instance for the fault tests of a single mode: a document client whose
 * requests a test may fault (`fault-injection.ts`), invocations whose answer a crash discards (as
 * the Lambda runtime would: the batch is delivered again), late copies of requests landing after
 * an invocation's answer and before the next one, and what the handler logs and dead-letters.
 */
import type { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import type { LogEntry } from '../../../lambda/core/logger';
import type { DeadLetterMessage } from '../../../lambda/dead-letter/dead-letter-message';
import { attachFaultInjection, type FaultController } from './fault-injection';

/** What a handler of a fault test logs and dead-letters. */
export interface HandlerRecord {
  readonly logs: LogEntry[];
  readonly deadLetters: DeadLetterMessage[];
}

/** The options of a handler that records into `sink`: every log line, dead letters sent directly, no metrics. */
export function recordingHandlerOptions(sink: HandlerRecord) {
  return {
    logger: { log: (entry: LogEntry) => sink.logs.push(entry) },
    logLevel: 'debug' as const,
    metrics: false as const,
    deadLetter: 'direct' as const,
    deadLetterSender: { send: async (message: DeadLetterMessage) => void sink.deadLetters.push(message) },
  };
}

/** The client of a simulated instance, and how it runs one invocation. */
export interface FaultedInstance {
  readonly client: DynamoDBDocumentClient;
  /**
   * Runs one invocation: what it answered, or `undefined` when it threw or crashed (its answer
   * never reaches the queue). Late copies of its requests land before this returns.
   */
  invoke<T>(run: () => Promise<T>): Promise<T | undefined>;
}

/**
 * Creates a simulated instance over `client` (one SDK attempt per request, so a fault is not
 * retried away), whose requests `controller.decide` may fault.
 */
export function createFaultedInstance(
  client: DynamoDBDocumentClient,
  controller: Pick<FaultController, 'decide' | 'onServerResponse'>,
): FaultedInstance {
  let crashed = false;
  const lateCopies: Promise<number>[] = [];
  attachFaultInjection(client, {
    ...controller,
    isCrashed: () => crashed,
    crash: () => {
      crashed = true;
    },
    // The copy lands after the answer, before the next delivery.
    onLateDuplicate: (_request, send) => void lateCopies.push(send()),
  });
  return {
    client,
    async invoke(run) {
      crashed = false;
      let answer: Awaited<ReturnType<typeof run>> | undefined;
      try {
        answer = await run();
      } catch {
        answer = undefined;
      }
      await Promise.all(lateCopies.splice(0));
      return crashed ? undefined : answer;
    },
  };
}
