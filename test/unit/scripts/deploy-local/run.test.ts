import { describe, expect, it } from 'vitest';
import { parseDeployLocalArgs, runDeployLocal } from '../../../../scripts/deploy-local/run';

const root = '/repo';

describe('parseDeployLocalArgs', () => {
  it('deploys through the CLI with .local/ as home and local=true before the caller’s context', () => {
    expect(parseDeployLocalArgs(['Stack*', '-c', 'local=false', '-c', 'a=b', '--skip-fixups'], root)).toEqual(
      {
        kind: 'local',
        serve: false,
        command: {
          kind: 'deploy',
          cacheDir: '/repo/.local',
          stacks: ['Stack*'],
          app: undefined,
          context: { local: 'false', a: 'b' },
          fixups: false,
        },
      },
    );
    expect(parseDeployLocalArgs(['--serve', '--app', 'npx tsx app.ts'], root)).toEqual({
      kind: 'local',
      serve: true,
      command: {
        kind: 'deploy',
        cacheDir: '/repo/.local',
        stacks: [],
        app: 'npx tsx app.ts',
        context: { local: 'true' },
        fixups: true,
      },
    });
  });

  it('destroys through the CLI, and resets only with --destroy --reset', () => {
    expect(parseDeployLocalArgs(['--destroy', 'A', 'B'], root)).toEqual({
      kind: 'local',
      serve: false,
      command: { kind: 'destroy', cacheDir: '/repo/.local', stacks: ['A', 'B'] },
    });
    expect(parseDeployLocalArgs(['--destroy', '--reset'], root)).toEqual({ kind: 'reset' });
    expect(parseDeployLocalArgs(['-h'], root)).toEqual({ kind: 'help' });
  });

  it('refuses flags that do not go together, and what the CLI refuses, as USAGE', () => {
    const usage = (argv: string[]) => {
      try {
        parseDeployLocalArgs(argv, root);
      } catch (error) {
        return { code: (error as { code?: string }).code, message: (error as Error).message };
      }
      return undefined;
    };
    expect(usage(['--reset'])).toEqual({ code: 'USAGE', message: '--reset only goes with --destroy.' });
    expect(usage(['--serve', '--destroy'])).toEqual({
      code: 'USAGE',
      message: '--serve deploys; it does not go with --destroy.',
    });
    expect(usage(['--destroy', '--reset', 'A'])).toEqual({
      code: 'USAGE',
      message: '--reset wipes the whole emulator; it takes nothing else, got `A`.',
    });
    expect(usage(['--destroy', '--app', 'x'])).toEqual({
      code: 'USAGE',
      message: '`--app` only goes with `local deploy`',
    });
    expect(usage(['-c', 'novalue'])).toEqual({
      code: 'USAGE',
      message: 'Expected `--context` to be key=value, got `novalue`',
    });
  });
});

describe('runDeployLocal', () => {
  const io = (env: NodeJS.ProcessEnv) => {
    const out: string[] = [];
    const err: string[] = [];
    return {
      out,
      err,
      io: {
        stdout: { write: (text: string) => out.push(text) },
        stderr: { write: (text: string) => err.push(text) },
        env,
        root,
        untilInterrupted: async () => {},
      },
    };
  };

  it('exits 2 and says how to get an emulator when AWS_ENDPOINT_URL is not set and --serve is not given', async () => {
    const deploy = io({});
    const destroy = io({});
    const reset = io({});

    expect(await runDeployLocal(parseDeployLocalArgs([], root), deploy.io)).toBe(2);
    expect(await runDeployLocal(parseDeployLocalArgs(['--destroy'], root), destroy.io)).toBe(2);
    expect(await runDeployLocal({ kind: 'reset' }, reset.io)).toBe(2);

    expect(deploy.err.join('')).toMatch(
      /^AWS_ENDPOINT_URL is not set, so there is no emulator to deploy to\./,
    );
    expect(deploy.err.join('')).toContain('npm run deploy:local -- --serve');
    expect(destroy.err.join('')).toMatch(
      /^AWS_ENDPOINT_URL is not set: there is no running emulator to destroy/,
    );
    expect(reset.err).toEqual(destroy.err);
    expect([...deploy.out, ...destroy.out, ...reset.out]).toEqual([]);
  });

  it('prints the usage on stdout for --help', async () => {
    const help = io({});

    expect(await runDeployLocal({ kind: 'help' }, help.io)).toBe(0);
    expect(help.out.join('')).toMatch(/^Usage:\n {2}npm run deploy:local -- \[stack \.\.\.\]/);
    expect(help.err).toEqual([]);
  });
});
