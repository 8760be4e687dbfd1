import { describe, expect, it } from 'vitest';
import { cdkEnv } from '../../cli/local/cdk-cli';
import { signRequest } from '../../scripts/main-job/sigv4';

const example = {
  service: 'service',
  region: 'us-east-1',
  credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY' },
  now: new Date('2015-08-30T12:36:00Z'),
};

describe('signRequest', () => {
  it('matches the get-vanilla vector of the AWS Signature Version 4 test suite', () => {
    const headers = signRequest({
      ...example,
      method: 'GET',
      url: 'https://example.amazonaws.com/',
      headers: {},
      body: '',
    });
    expect(headers).toEqual({
      host: 'example.amazonaws.com',
      'x-amz-date': '20150830T123600Z',
      authorization:
        'AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, ' +
        'SignedHeaders=host;x-amz-date, ' +
        'Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31',
    });
  });

  it('signs the session token and lower-cased headers', () => {
    const headers = signRequest({
      ...example,
      credentials: { ...example.credentials, sessionToken: 'token' },
      method: 'POST',
      url: 'http://127.0.0.1:4566/',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' },
      body: 'Action=DescribeStacks&Version=2010-05-15',
    });
    expect(headers['x-amz-security-token']).toBe('token');
    expect(headers['content-type']).toBe('application/x-www-form-urlencoded; charset=utf-8');
    expect(headers.host).toBe('127.0.0.1:4566');
    expect(headers.authorization).toMatch(
      /^AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE\/20150830\/us-east-1\/service\/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature=[0-9a-f]{64}$/,
    );
  });
});

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
