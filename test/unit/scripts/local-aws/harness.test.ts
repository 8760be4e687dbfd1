import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ensureMiniStack, localAwsEnv, startLocalAws } from '../../../../scripts/local-aws/harness';

describe('local AWS harness', () => {
  const roots: string[] = [];
  afterEach(() => {
    for (const root of roots.splice(0)) rmSync(root, { recursive: true, force: true });
  });

  it('gives the four environment variables that point SDKs and child processes at the endpoint', () => {
    const env = localAwsEnv({
      endpoint: 'http://127.0.0.1:4566',
      region: 'eu-west-1',
      credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
    });

    expect(env).toEqual({
      AWS_ENDPOINT_URL: 'http://127.0.0.1:4566',
      AWS_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
    });
  });

  it('rejects an AWS_ENDPOINT_URL that is not an http(s) URL before sending any request', async () => {
    await expect(startLocalAws({ env: { AWS_ENDPOINT_URL: 'localhost:4566' } })).rejects.toThrow(
      'Expected AWS_ENDPOINT_URL to be an http(s) URL, got `localhost:4566`',
    );
  });

  it('names the packages to install and the AWS_ENDPOINT_URL alternative when Python is missing', async () => {
    const root = mkdtempSync(join(tmpdir(), 'eo-harness-'));
    roots.push(root);

    const failure = ensureMiniStack({ root, python: join(root, 'no-such-python3') });

    await expect(failure).rejects.toThrow(/not found/);
    await expect(failure).rejects.toThrow('apt-get install python3 python3-venv python3-pip');
    await expect(failure).rejects.toThrow('set AWS_ENDPOINT_URL to a running LocalStack or MiniStack');
  });
});
