import { describe, expect, it } from 'vitest';
import { cdkEnv, unchangedStacks } from '../../../../cli/local/cdk-cli';

describe('cdkEnv', () => {
  it('points every AWS client at the endpoint and drops the caller’s AWS settings', () => {
    const env = cdkEnv(
      {
        endpoint: 'http://127.0.0.1:4566',
        region: 'eu-west-1',
        account: '000000000000',
        credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
      },
      { PATH: '/usr/bin', AWS_PROFILE: 'production', AWS_SESSION_TOKEN: 'real', CDK_DOCKER: 'podman' },
    );
    expect(env).toMatchObject({
      PATH: '/usr/bin',
      CDK_DOCKER: 'podman',
      AWS_ENDPOINT_URL: 'http://127.0.0.1:4566',
      AWS_ENDPOINT_URL_S3: 'http://127.0.0.1:4566',
      AWS_REGION: 'eu-west-1',
      AWS_DEFAULT_REGION: 'eu-west-1',
      AWS_ACCESS_KEY_ID: 'test',
      AWS_SECRET_ACCESS_KEY: 'test',
      CDK_DEFAULT_ACCOUNT: '000000000000',
      CDK_DEFAULT_REGION: 'eu-west-1',
    });
    expect(env.AWS_PROFILE).toBeUndefined();
    expect(env.AWS_SESSION_TOKEN).toBeUndefined();
  });
});

describe('unchangedStacks', () => {
  it('names the stacks a deploy reported without changes', () => {
    const lines = [
      'Shop: deploying... [1/2]',
      '',
      ' \u2705  Shop (no changes)',
      '',
      ' \u2705  Stage/Orders',
      'Stack ARN:',
      '\u2705  Stage/Events (no changes)',
    ];
    expect(unchangedStacks(lines)).toEqual(['Shop', 'Stage/Events']);
    expect(unchangedStacks(['\u2705  Shop'])).toEqual([]);
  });
});
