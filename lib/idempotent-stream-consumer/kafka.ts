/**
 * A Kafka source of an `IdempotentStreamConsumer`: the event source mapping's Kafka settings
 * (topic, brokers or MSK cluster, consumer group, authentication, VPC, provisioned pollers), the
 * role's grants for them with explicit actions, and the checks of the `kafka` prop.
 */
import { Fn, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Fail } from '../consumer-validation';
import { KAFKA_POLLERS } from './defaults';
import type { KafkaAuthentication, KafkaTopicSource } from './props';

/**
 * What the event source mapping calls on an MSK cluster (AWS's "Configuring Lambda permissions
 * for Amazon MSK event source mappings": `kafka:DescribeClusterV2` serves provisioned and
 * serverless clusters).
 */
export const MSK_CLUSTER_ACTIONS: readonly string[] = Object.freeze([
  'kafka:DescribeClusterV2',
  'kafka:GetBootstrapBrokers',
]);

/**
 * What the event source mapping calls to reach a cluster in a VPC through network interfaces
 * (the same page's VPC permissions). The `Describe*` actions have no resource-level permissions.
 */
export const KAFKA_VPC_ACTIONS: readonly string[] = Object.freeze([
  'ec2:CreateNetworkInterface',
  'ec2:DescribeNetworkInterfaces',
  'ec2:DescribeVpcs',
  'ec2:DeleteNetworkInterface',
  'ec2:DescribeSubnets',
  'ec2:DescribeSecurityGroups',
]);

/** What a consumer needs on an MSK cluster with IAM access control, by resource. */
export const MSK_IAM_ACTIONS: {
  /** On the cluster. */
  readonly cluster: readonly string[];
  /** On the topic. */
  readonly topic: readonly string[];
  /** On the consumer group. */
  readonly group: readonly string[];
} = Object.freeze({
  cluster: Object.freeze(['kafka-cluster:Connect', 'kafka-cluster:DescribeClusterDynamicConfiguration']),
  topic: Object.freeze(['kafka-cluster:DescribeTopic', 'kafka-cluster:ReadData']),
  group: Object.freeze(['kafka-cluster:DescribeGroup', 'kafka-cluster:AlterGroup']),
});

/** Kafka's legal topic names (at most 249 characters). */
const TOPIC_NAME = /^[A-Za-z0-9._-]{1,249}$/;
/** A broker as `host:port`: a host name or IPv4 address, or an IPv6 address in brackets. */
const BROKER = /^(?:[^\s:[\]]+|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/;
/** Lambda's pattern for `KafkaConsumerGroupId`. */
const CONSUMER_GROUP_ID = /^[a-zA-Z0-9-/*:_+=.@-]{1,200}$/;
const AUTHENTICATIONS: readonly KafkaAuthentication[] = [
  'SASL_SCRAM_512_AUTH',
  'SASL_SCRAM_256_AUTH',
  'BASIC_AUTH',
  'CLIENT_CERTIFICATE_TLS_AUTH',
];

/** The settings of the event source mapping that come from the `kafka` prop. */
export function kafkaMappingOptions(
  kafka: KafkaTopicSource,
  consumerGroupId: string,
): Pick<
  lambda.EventSourceMappingProps,
  | 'eventSourceArn'
  | 'kafkaTopic'
  | 'kafkaBootstrapServers'
  | 'kafkaConsumerGroupId'
  | 'sourceAccessConfigurations'
  | 'provisionedPollerConfig'
> {
  const access: lambda.SourceAccessConfiguration[] = [];
  if (kafka.secret) {
    const type = kafka.clusterArn
      ? lambda.SourceAccessConfigurationType.SASL_SCRAM_512_AUTH
      : lambda.SourceAccessConfigurationType.of(kafka.authentication ?? 'SASL_SCRAM_512_AUTH');
    access.push({ type, uri: kafka.secret.secretArn });
  }
  for (const subnet of kafka.vpcSubnetIds ?? []) {
    access.push({ type: lambda.SourceAccessConfigurationType.VPC_SUBNET, uri: `subnet:${subnet}` });
  }
  for (const group of kafka.securityGroupIds ?? []) {
    access.push({
      type: lambda.SourceAccessConfigurationType.VPC_SECURITY_GROUP,
      uri: `security_group:${group}`,
    });
  }
  return {
    ...(kafka.clusterArn ? { eventSourceArn: kafka.clusterArn } : {}),
    ...(kafka.bootstrapServers ? { kafkaBootstrapServers: [...kafka.bootstrapServers] } : {}),
    kafkaTopic: kafka.topic,
    kafkaConsumerGroupId: consumerGroupId,
    ...(access.length > 0 ? { sourceAccessConfigurations: access } : {}),
    provisionedPollerConfig: {
      minimumPollers: kafka.provisionedPollers?.minimum ?? KAFKA_POLLERS.defaultMinimum,
      maximumPollers: kafka.provisionedPollers?.maximum ?? KAFKA_POLLERS.defaultMaximum,
    },
  };
}

/**
 * The ARN of a topic or consumer group of the MSK cluster `clusterArn`
 * (`arn:…:cluster/<name>/<uuid>` → `arn:…:<kind>/<name>/<uuid>/<resource>`).
 */
export function mskResourceArn(clusterArn: string, kind: 'topic' | 'group', resource: string): string {
  if (!Token.isUnresolved(clusterArn)) return `${clusterArn.replace(':cluster/', `:${kind}/`)}/${resource}`;
  const parts = Fn.split(':cluster/', clusterArn, 2);
  return Fn.join('', [Fn.select(0, parts), `:${kind}/`, Fn.select(1, parts), `/${resource}`]);
}

/** Grants the function's role what the event source mapping needs to read `kafka`. */
export function grantKafkaSource(
  grantee: iam.IGrantable,
  kafka: KafkaTopicSource,
  consumerGroupId: string,
): void {
  const allow = (actions: readonly string[], resourceArns: string[]) =>
    iam.Grant.addToPrincipal({ grantee, actions: [...actions], resourceArns });
  if (kafka.clusterArn) {
    allow(MSK_CLUSTER_ACTIONS, [kafka.clusterArn]);
    if (!kafka.secret) {
      allow(MSK_IAM_ACTIONS.cluster, [kafka.clusterArn]);
      allow(MSK_IAM_ACTIONS.topic, [mskResourceArn(kafka.clusterArn, 'topic', kafka.topic)]);
      allow(MSK_IAM_ACTIONS.group, [mskResourceArn(kafka.clusterArn, 'group', consumerGroupId)]);
    }
  }
  if (usesVpc(kafka)) allow(KAFKA_VPC_ACTIONS, ['*']);
  kafka.secret?.grantRead(grantee);
}

/** An MSK cluster is always in a VPC; a self-managed one when its subnets are given. */
export function usesVpc(kafka: KafkaTopicSource): boolean {
  return kafka.clusterArn !== undefined || (kafka.vpcSubnetIds?.length ?? 0) > 0;
}

/** The checks of the `kafka` prop. */
export function checkKafkaSource(kafka: KafkaTopicSource, fail: Fail): void {
  const given = (value: string | undefined) => value !== undefined && !Token.isUnresolved(value);
  if (given(kafka.topic) && !TOPIC_NAME.test(kafka.topic)) {
    fail(
      `Expected \`kafka.topic\` to be 1 to 249 characters of A-Z a-z 0-9 . _ -, got ${JSON.stringify(kafka.topic)}`,
    );
  }
  if ((kafka.clusterArn === undefined) === (kafka.bootstrapServers === undefined)) {
    fail(
      `Expected exactly one of \`kafka.clusterArn\` (Amazon MSK) and \`kafka.bootstrapServers\` (a self-managed cluster), got ${kafka.clusterArn === undefined ? 'neither' : 'both'}`,
    );
  }
  if (kafka.bootstrapServers?.length === 0)
    fail('Expected `kafka.bootstrapServers` to list at least one broker');
  for (const server of kafka.bootstrapServers ?? []) {
    if (given(server) && !BROKER.test(server)) {
      fail(
        `Expected each of \`kafka.bootstrapServers\` to be host:port ([address]:port for IPv6), got ${JSON.stringify(server)}`,
      );
    }
  }
  if (given(kafka.consumerGroupId) && !CONSUMER_GROUP_ID.test(kafka.consumerGroupId!)) {
    fail(
      `Expected \`kafka.consumerGroupId\` to be 1 to 200 characters of A-Z a-z 0-9 - / * : _ + = . @, got ${JSON.stringify(kafka.consumerGroupId)}`,
    );
  }
  if (kafka.authentication !== undefined) {
    if (!AUTHENTICATIONS.includes(kafka.authentication)) {
      fail(
        `Expected \`kafka.authentication\` to be one of ${AUTHENTICATIONS.join(', ')}, got ${JSON.stringify(kafka.authentication)}`,
      );
    }
    if (!kafka.secret)
      fail('Expected `kafka.authentication` only with `kafka.secret`, the credentials it reads');
    if (kafka.clusterArn) {
      fail('Expected no `kafka.authentication` with `kafka.clusterArn`: an MSK secret is SASL/SCRAM-512');
    }
  }
  const subnets = kafka.vpcSubnetIds?.length ?? 0;
  const groups = kafka.securityGroupIds?.length ?? 0;
  if ((subnets > 0 || groups > 0) && kafka.clusterArn) {
    fail(
      'Expected `kafka.vpcSubnetIds` and `kafka.securityGroupIds` only for a self-managed cluster: MSK gives the event source its VPC',
    );
  }
  if (subnets > 0 !== groups > 0) {
    fail('Expected both `kafka.vpcSubnetIds` and `kafka.securityGroupIds`, or neither');
  }
  const { minimum, maximum } = kafka.provisionedPollers ?? {};
  for (const [name, value] of [
    ['minimum', minimum],
    ['maximum', maximum],
  ] as const) {
    if (
      value !== undefined &&
      !(Number.isInteger(value) && value >= KAFKA_POLLERS.min && value <= KAFKA_POLLERS.max)
    ) {
      fail(
        `Expected \`kafka.provisionedPollers.${name}\` to be an integer from ${KAFKA_POLLERS.min} to ${KAFKA_POLLERS.max}, got ${value}`,
      );
    }
  }
  const low = minimum ?? KAFKA_POLLERS.defaultMinimum;
  const high = maximum ?? KAFKA_POLLERS.defaultMaximum;
  if (low > high) {
    fail(`Expected \`kafka.provisionedPollers.minimum\` (${low}) to be at most \`maximum\` (${high})`);
  }
}
