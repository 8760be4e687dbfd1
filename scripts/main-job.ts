/**
 * `npm start`: the main job. Starts local AWS (or uses `AWS_ENDPOINT_URL`), deploys the example
 * app, drives the sample order and audit logs through it (resends, redeliveries, a poison
 * message), prints what the consumers did, replays everything with the double-tap helper, and
 * exits 0 only when every check held (`--verbose` lists every check). See `scripts/main-job/run.ts`.
 */
import { parseArgs } from 'node:util';
import { runMainJob } from './main-job/run';
import { exitWhenDone, parseOrExit } from './support/command-line';

const USAGE = `Usage: npm start [-- --verbose]

  --verbose   list every check as a PASS line (default: the passed checks fold into one line)
  -h, --help  this text`;

function parseMainJobArgs(argv: readonly string[]): { verbose: boolean } | undefined {
  const { values } = parseArgs({
    args: [...argv],
    options: { verbose: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) return undefined;
  return { verbose: values.verbose ?? false };
}

exitWhenDone(runMainJob(parseOrExit(parseMainJobArgs, USAGE)).then(({ ok }) => ok));
