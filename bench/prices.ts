/**
 * The dated price table and the arithmetic that turns counted requests, capacity units and
 * modelled durations into dollars per million messages. List prices, us-east-1, no free tier
 * (it is per account, not per message), no savings plans.
 */

/** One price, where it was read and when. */
export interface Price {
  readonly dollars: number;
  /** What one `dollars` buys. */
  readonly per: string;
  readonly source: string;
  /** When the price was read from the source. */
  readonly read: string;
}

/** The prices the benchmark uses. */
export const PRICES = {
  dynamoDbWriteRequestUnit: {
    dollars: 0.625 / 1e6,
    per: 'on-demand write request unit (standard table class), us-east-1',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    read: '2026-12-01 (the rate since the on-demand price cut of 2024-11-01)',
  },
  dynamoDbReadRequestUnit: {
    dollars: 0.125 / 1e6,
    per: 'on-demand read request unit (standard table class), us-east-1',
    source: 'https://aws.amazon.com/dynamodb/pricing/on-demand/',
    read: '2026-12-01 (the rate since the on-demand price cut of 2024-11-01)',
  },
  lambdaRequest: {
    dollars: 0.2 / 1e6,
    per: 'Lambda invocation, us-east-1',
    source: 'https://aws.amazon.com/lambda/pricing/',
    read: '2026-12-01',
  },
  lambdaGigabyteSecond: {
    dollars: 0.000_016_666_7,
    per: 'Lambda GB-second, x86, first 6 billion GB-seconds a month, us-east-1; billed in 1 ms steps',
    source: 'https://aws.amazon.com/lambda/pricing/',
    read: '2026-12-01',
  },
  sqsStandardRequest: {
    dollars: 0.4 / 1e6,
    per: 'SQS standard queue request (first 100 billion a month), each 64 KB chunk of a payload billed as one',
    source: 'https://aws.amazon.com/sqs/pricing/',
    read: '2026-12-01',
  },
} as const satisfies Record<string, Price>;

/** The deployment the dollars assume. */
export const COST_ASSUMPTIONS = {
  /** Lambda memory: one full vCPU (AWS: 1,769 MB is one vCPU), the figure the CPU cost is converted at. */
  lambdaMemoryMegabytes: 1769,
  /** Messages per invocation. */
  batchSize: 10,
  /** Share of deliveries that are duplicates in the blended figure. */
  duplicateRate: 0.05,
  /**
   * SQS requests per message: the producer's `SendMessage`, and the event source's
   * `ReceiveMessage` and `DeleteMessageBatch` shared by a batch; empty receives of an idle
   * queue are not counted. The benchmark's bodies are under 64 KB: one chunk each.
   */
  sqsRequestsPerMessage: (batchSize: number) => 1 + 2 / batchSize,
} as const;

/** What one message costs, and what it is made of. */
export interface MessageCost {
  readonly writeUnits: number;
  readonly readUnits: number;
  /** The modelled duration of the batch the message is in, milliseconds (before rounding up). */
  readonly batchMillis: number;
}

/** Dollars per million messages, by part. */
export interface DollarsPerMillion {
  readonly dynamoDb: number;
  readonly lambda: number;
  readonly sqs: number;
  readonly total: number;
}

/** Dollars per million messages that cost `cost` each, in batches of `batchSize`. */
export function dollarsPerMillion(
  cost: MessageCost,
  batchSize: number = COST_ASSUMPTIONS.batchSize,
): DollarsPerMillion {
  const million = 1e6;
  const dynamoDb =
    million *
    (cost.writeUnits * PRICES.dynamoDbWriteRequestUnit.dollars +
      cost.readUnits * PRICES.dynamoDbReadRequestUnit.dollars);
  const billedSeconds = Math.ceil(cost.batchMillis) / 1000;
  const gigabytes = COST_ASSUMPTIONS.lambdaMemoryMegabytes / 1024;
  const perBatch =
    PRICES.lambdaRequest.dollars + billedSeconds * gigabytes * PRICES.lambdaGigabyteSecond.dollars;
  const lambda = (million / batchSize) * perBatch;
  const sqs = million * COST_ASSUMPTIONS.sqsRequestsPerMessage(batchSize) * PRICES.sqsStandardRequest.dollars;
  return { dynamoDb, lambda, sqs, total: dynamoDb + lambda + sqs };
}

/** `(1 - rate) * first + rate * duplicate`: a million deliveries of which `rate` are duplicates. */
export function blended(
  first: number,
  duplicate: number,
  rate: number = COST_ASSUMPTIONS.duplicateRate,
): number {
  return (1 - rate) * first + rate * duplicate;
}
