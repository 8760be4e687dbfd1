/**
 * A real Apache Kafka broker for the tests, in KRaft mode (one process as broker and controller),
 * listening on 127.0.0.1 only. Its jars are Apache Kafka's own artifacts from Maven Central,
 * pinned in `artifacts.json` (the runtime closure of `org.apache.kafka:kafka_2.13`, each with its
 * SHA-256), downloaded once into the project-local `.local/kafka/libs` (as the emulator's virtual
 * environment is kept in `.local/venv`), and run with the machine's Java 17.
 *
 * Stopped by the process that started it (`stop()`), its data directory removed.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { projectRoot } from '../local-aws/harness';

/** One jar of the broker's classpath. */
interface Artifact {
  readonly group: string;
  readonly artifact: string;
  readonly version: string;
  readonly classifier?: string;
  readonly sha256: string;
  readonly bytes: number;
}

interface Artifacts {
  readonly kafka: string;
  readonly repository: string;
  readonly jars: readonly Artifact[];
}

const ARTIFACTS = JSON.parse(readFileSync(join(__dirname, 'artifacts.json'), 'utf8')) as Artifacts;

/** The pinned Apache Kafka version. */
export const KAFKA_VERSION = ARTIFACTS.kafka;

/** Where the jars are kept. */
export function kafkaLibsDir(root: string = projectRoot()): string {
  return join(root, '.local', 'kafka', 'libs');
}

function fileNameOf(jar: Artifact): string {
  return `${jar.artifact}-${jar.version}${jar.classifier ? `-${jar.classifier}` : ''}.jar`;
}

function sha256Of(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * Downloads every pinned jar missing from `.local/kafka/libs` (a jar whose SHA-256 differs is
 * downloaded again), checking each against its pinned SHA-256. Returns the directory and how
 * many jars were downloaded.
 */
export async function ensureKafka(
  options: { readonly root?: string; readonly log?: (message: string) => void } = {},
): Promise<{ readonly libs: string; readonly downloaded: number }> {
  const libs = kafkaLibsDir(options.root);
  mkdirSync(libs, { recursive: true });
  const missing = ARTIFACTS.jars.filter((jar) => {
    const file = join(libs, fileNameOf(jar));
    return !existsSync(file) || sha256Of(readFileSync(file)) !== jar.sha256;
  });
  if (missing.length > 0) {
    const megabytes = missing.reduce((sum, jar) => sum + jar.bytes, 0) / 1e6;
    options.log?.(
      `Downloading ${missing.length} Apache Kafka ${KAFKA_VERSION} jars (${megabytes.toFixed(1)} MB) from Maven Central`,
    );
  }
  // A few at a time: Maven Central serves each quickly, and the machine may be small.
  for (let start = 0; start < missing.length; start += 6) {
    await Promise.all(missing.slice(start, start + 6).map((jar) => download(jar, libs)));
  }
  return { libs, downloaded: missing.length };
}

async function download(jar: Artifact, libs: string): Promise<void> {
  const path = `${jar.group.replaceAll('.', '/')}/${jar.artifact}/${jar.version}/${fileNameOf(jar)}`;
  const response = await fetch(`${ARTIFACTS.repository}/${path}`);
  if (!response.ok) throw new Error(`Maven Central answered ${response.status} for ${path}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (sha256Of(bytes) !== jar.sha256) throw new Error(`${path}: SHA-256 differs from the pinned one`);
  writeFileSync(join(libs, fileNameOf(jar)), bytes);
}

/** A running broker. */
export interface LocalKafka {
  /** `127.0.0.1:<port>`, for a client's `brokers`. */
  readonly brokers: readonly string[];
  /** Stops the broker and removes its data. */
  stop(): Promise<void>;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.connect(port, '127.0.0.1');
  });
}

/**
 * Starts a broker (downloading its jars first when missing) on free ports of 127.0.0.1, with
 * `partitions` partitions per topic created on first use, and waits until it accepts
 * connections. Throws when Java is missing or the broker does not start within `timeoutMillis`.
 */
export async function startLocalKafka(
  options: {
    readonly partitions?: number;
    readonly timeoutMillis?: number;
    readonly log?: (message: string) => void;
  } = {},
): Promise<LocalKafka> {
  const java = spawnSync('java', ['-version'], { encoding: 'utf8' });
  if (java.error || java.status !== 0) {
    throw new Error('Java (17 or later) is needed on the PATH to run the local Kafka broker');
  }
  const { libs } = await ensureKafka({ log: options.log });
  const [port, controllerPort] = [await freePort(), await freePort()];
  const home = mkdtempSync(join(tmpdir(), 'eo-kafka-'));
  const config = join(home, 'server.properties');
  writeFileSync(
    config,
    [
      'process.roles=broker,controller',
      'node.id=1',
      `controller.quorum.voters=1@127.0.0.1:${controllerPort}`,
      `listeners=PLAINTEXT://127.0.0.1:${port},CONTROLLER://127.0.0.1:${controllerPort}`,
      `advertised.listeners=PLAINTEXT://127.0.0.1:${port}`,
      'controller.listener.names=CONTROLLER',
      'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
      `log.dirs=${join(home, 'data')}`,
      `num.partitions=${options.partitions ?? 2}`,
      'offsets.topic.replication.factor=1',
      'transaction.state.log.replication.factor=1',
      'transaction.state.log.min.isr=1',
      'group.initial.rebalance.delay.ms=0',
      '',
    ].join('\n'),
  );
  const classpath = join(libs, '*');
  const format = spawnSync(
    'java',
    [
      '-cp',
      classpath,
      'kafka.tools.StorageTool',
      'format',
      '-t',
      'effectively-once-test-cluster0',
      '-c',
      config,
    ],
    { encoding: 'utf8' },
  );
  if (format.status !== 0)
    throw new Error(`Formatting the Kafka storage failed: ${format.stderr || format.stdout}`);
  const logFile = join(home, 'broker.log');
  const broker: ChildProcess = spawn('java', ['-Xmx512m', '-cp', classpath, 'kafka.Kafka', config], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  broker.stdout?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  broker.stderr?.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const stop = async (): Promise<void> => {
    if (broker.exitCode === null && broker.signalCode === null) {
      const exited = new Promise<void>((resolve) => broker.once('exit', () => resolve()));
      broker.kill('SIGTERM');
      const forced = setTimeout(() => broker.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(forced);
    }
    rmSync(home, { recursive: true, force: true });
  };
  const deadline = Date.now() + (options.timeoutMillis ?? 90_000);
  while (!(await accepts(port))) {
    if (broker.exitCode !== null || Date.now() > deadline) {
      writeFileSync(logFile, output.join(''));
      await stop();
      throw new Error(`The Kafka broker did not start on 127.0.0.1:${port}: ${output.join('').slice(-2000)}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  options.log?.(`Apache Kafka ${KAFKA_VERSION} on 127.0.0.1:${port}`);
  return { brokers: [`127.0.0.1:${port}`], stop };
}
