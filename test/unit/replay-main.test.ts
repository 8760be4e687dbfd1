import { describe, expect, it } from 'vitest';
import { main, USAGE } from '../../cli/main';
import { REPLAY_USAGE } from '../../cli/replay/args';

async function run(argv: string[]) {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const code = await main(argv, {
    stdout: { write: (text: string) => stdout.push(text) },
    stderr: { write: (text: string) => stderr.push(text) },
  });
  return { code, stdout: stdout.join(''), stderr: stderr.join('') };
}

describe('main', () => {
  it('prints the command list on stdout and exits 0 without arguments or with --help', async () => {
    expect(await run([])).toEqual({ code: 0, stdout: USAGE, stderr: '' });
    expect(await run(['--help'])).toEqual({ code: 0, stdout: USAGE, stderr: '' });
  });

  it('prints the replay usage for replay --help', async () => {
    expect(await run(['replay', '--help'])).toEqual({ code: 0, stdout: REPLAY_USAGE, stderr: '' });
  });

  it('exits 2 with one line and a pointer to the help for an unknown command', async () => {
    expect(await run(['relpay'])).toEqual({
      code: 2,
      stdout: '',
      stderr: 'effectively-once: Unknown command `relpay`\nRun `effectively-once --help` for usage.\n',
    });
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
