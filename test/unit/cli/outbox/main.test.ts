import { describe, expect, it } from 'vitest';
import { USAGE } from '../../../../cli/main';
import { REDRIVE_USAGE } from '../../../../cli/outbox/args';
import { runMain } from '../../../support/cli';

const run = runMain;

describe('main outbox', () => {
  it('lists the outbox command in the usage', () => {
    expect(USAGE).toContain('outbox    outbox redrive: publish outbox events again');
  });

  it('prints the redrive usage for outbox --help and outbox redrive --help', async () => {
    expect(await run(['outbox', '--help'])).toEqual({ code: 0, stdout: REDRIVE_USAGE, stderr: '' });
    expect(await run(['outbox', 'redrive', '--help'])).toEqual({
      code: 0,
      stdout: REDRIVE_USAGE,
      stderr: '',
    });
  });

  it('exits 2 with one line and a pointer to the help without a subcommand', async () => {
    expect(await run(['outbox'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'effectively-once outbox: Expected a subcommand: redrive\n' +
        'Run `effectively-once outbox --help` for usage.\n',
    });
  });

  it('names the redrive command in a usage error', async () => {
    expect(await run(['outbox', 'redrive', '--relay', 'orders-relay'])).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'effectively-once outbox redrive: Expected what to redrive: `--id EVENT_ID`, `--since TIME` or `--on-failure-queue URL`\n' +
        'Run `effectively-once outbox redrive --help` for usage.\n',
    });
  });
});
