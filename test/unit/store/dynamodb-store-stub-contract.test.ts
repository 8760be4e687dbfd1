/**
 * The store contract suite against the real DynamoDB store over the benchmark's DynamoDB stub:
 * the real SDK (serialization, retries, error parsing) and the one expression interpreter of
 * the test doubles answering the store's own conditions. A condition that breaks a fence fails
 * here, without the emulator (which runs the same suite in `test/integration/store.test.ts`).
 */
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { unmarshall } from '@aws-sdk/util-dynamodb';
import { createStubTable } from '../../../bench/stub/dynamodb-stub';
import { createStubClient } from '../../../bench/stub/stub-clients';
import { createDynamoDbStore } from '../../../lambda/store/dynamodb-store';
import { describeInboxStoreContract } from '../../support/store-contract';

describeInboxStoreContract('DynamoDB store over the bench stub', () => {
  const table = createStubTable({ inbox: ['pk'], business: ['pk'] });
  const { client } = createStubClient(table);
  const document = DynamoDBDocumentClient.from(client, {
    marshallOptions: { removeUndefinedValues: true },
  });
  return {
    store: createDynamoDbStore({ client: document, tableName: 'inbox' }),
    businessTable: 'business',
    readItem: async (tableName, pk) => {
      const item = table.get(tableName, { pk: { S: pk } });
      // biome-ignore lint/suspicious/noExplicitAny: unmarshall's parameter type is the raw AttributeValue map.
      return item === undefined ? undefined : unmarshall(item as any);
    },
  };
});
