/**
 * Vitest global setup of the `integration` project: starts the local AWS emulator once for the
 * whole run (or reuses `AWS_ENDPOINT_URL`), hands its endpoint to the test files through
 * `inject('awsEndpoint')` (see `test/support/aws.ts`), and stops it after the run.
 */
import type { TestProject } from 'vitest/node';
import { localAwsEnv, startLocalAws } from '../../scripts/local-aws/harness';

/**
 * Starts (or reuses) the local AWS endpoint and provides it to the integration tests.
 *
 * When the harness started the emulator, the test processes also get its endpoint, region and
 * dummy credentials in their environment, so an SDK client created without options talks to the
 * emulator, never to real AWS. With a given `AWS_ENDPOINT_URL`, only unset values get defaults.
 *
 * @returns the teardown that stops what was started and restores the environment.
 */
export async function setup(project: TestProject): Promise<() => Promise<void>> {
  const aws = await startLocalAws({ log: (message) => console.log(`[local-aws] ${message}`) });
  const saved = { ...process.env };
  for (const [name, value] of Object.entries(localAwsEnv(aws))) {
    if (aws.started || !process.env[name]) process.env[name] = value;
  }
  project.provide('awsEndpoint', aws.endpoint);

  return async () => {
    for (const name of Object.keys(localAwsEnv(aws))) {
      if (saved[name] === undefined) delete process.env[name];
      else process.env[name] = saved[name];
    }
    await aws.stop();
  };
}
