/**
 * `npx tsx scripts/local-kafka.ts --install-only`: downloads the pinned Apache Kafka jars from
 * Maven Central into `.local/kafka/libs` (used by CI, so the download is its own step), checking
 * each against its SHA-256.
 */
import { ensureKafka, KAFKA_VERSION } from './local-kafka/broker';

async function main(args: readonly string[]): Promise<void> {
  if (args.length !== 1 || args[0] !== '--install-only') {
    throw new Error('Usage: npx tsx scripts/local-kafka.ts --install-only');
  }
  const { libs, downloaded } = await ensureKafka({ log: (message) => console.log(message) });
  console.log(
    downloaded > 0
      ? `Installed Apache Kafka ${KAFKA_VERSION}: ${downloaded} jars in ${libs}`
      : `Apache Kafka ${KAFKA_VERSION} is already installed in ${libs}`,
  );
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exitCode = 1;
});
