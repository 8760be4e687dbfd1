/**
 * `npm start`: the main job. Starts local AWS (or uses `AWS_ENDPOINT_URL`), deploys the example
 * app, drives the sample order and audit logs through it (resends, redeliveries, a poison
 * message), prints what the consumers did, replays everything with the double-tap helper, and
 * exits 0 only when every check held. See `scripts/main-job/run.ts`.
 */
import { runMainJob } from './main-job/run';

runMainJob().then(
  ({ ok }) => {
    process.exitCode = ok ? 0 : 1;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);
