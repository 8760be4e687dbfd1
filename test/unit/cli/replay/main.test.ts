import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LOCAL_USAGE, localUsage } from '../../../../cli/local/command';
import { USAGE } from '../../../../cli/main';
import { REPLAY_USAGE } from '../../../../cli/replay/args';
import { runMain } from '../../../support/cli';

const run = runMain;

describe('main', () => {
  it('prints the command list on stdout and exits 0 with --help', async () => {
    expect(await run(['--help'])).toEqual({ code: 0, stdout: USAGE, stderr: '' });
  });

  it('prints the command list on stderr and exits 2 without arguments', async () => {
    expect(await run([])).toEqual({ code: 2, stdout: '', stderr: USAGE });
  });

  it('prints the version of package.json for --version', async () => {
    const { version } = JSON.parse(
      readFileSync(join(__dirname, '..', '..', '..', '..', 'package.json'), 'utf8'),
    ) as {
      version: string;
    };
    expect(await run(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' });
  });

  it('lists the local command in the usage', () => {
    expect(USAGE).toContain('local     run your CDK app on a local AWS emulator');
  });

  it('prints the local usage for local --help', async () => {
    expect(await run(['local', '--help'])).toEqual({ code: 0, stdout: LOCAL_USAGE, stderr: '' });
  });

  it('exits 2 with one line and a pointer to the help for a local command without subcommand', async () => {
    expect(await run(['local'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'effectively-once local: Expected a subcommand: up, deploy, destroy, logs, down\n' +
        'Run `effectively-once local --help` for usage.\n',
    });
  });

  it('prints the replay usage for replay --help', async () => {
    expect(await run(['replay', '--help'])).toEqual({ code: 0, stdout: REPLAY_USAGE, stderr: '' });
  });

  it('prints the help of one local subcommand for local <subcommand> --help', async () => {
    for (const subcommand of ['up', 'deploy', 'destroy', 'down'] as const) {
      const help = await run(['local', subcommand, '--help']);
      expect(help).toEqual({ code: 0, stdout: localUsage(subcommand), stderr: '' });
      expect(help.stdout).toMatch(new RegExp(`^Usage: effectively-once local ${subcommand} `));
    }
  });

  it('exits 2 with one line, the command meant and a pointer to the help for a misspelt command', async () => {
    expect(await run(['relpay'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'effectively-once: Unknown command `relpay` (did you mean `replay`?)\n' +
        'Run `effectively-once --help` for usage.\n',
    });
    expect((await run(['lcoal', 'up'])).stderr).toBe(
      'effectively-once: Unknown command `lcoal` (did you mean `local`?)\n' +
        'Run `effectively-once --help` for usage.\n',
    );
    expect((await run(['deploy'])).stderr).toBe(
      'effectively-once: Unknown command `deploy` (did you mean `local deploy`?)\n' +
        'Run `effectively-once --help` for usage.\n',
    );
  });

  it('exits 2 on a usage error of replay, without a stack trace', async () => {
    expect(await run(['replay', '--log', 'x.jsonl'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'effectively-once replay: Missing required options `--queue-url URL`, `--table NAME`\n' +
        'Run `effectively-once replay --help` for usage.\n',
    });
  });

  it('exits 2 when the log file cannot be read, before contacting AWS', async () => {
    const result = await run([
      'replay',
      '--log',
      '/nonexistent/replay.jsonl',
      '--queue-url',
      'http://127.0.0.1:9/000000000000/q',
      '--table',
      't',
    ]);

    expect(result).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'effectively-once replay: Cannot read the log file `/nonexistent/replay.jsonl` (ENOENT)\n' +
        'Run `effectively-once replay --help` for usage.\n',
    });
  });
});
