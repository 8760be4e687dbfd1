#!/usr/bin/env node
/**
 * Entry point of the `effectively-once` command. Run it with `npx tsx cli/effectively-once.ts`
 * in this repository; the published package runs the compiled `dist/cli/effectively-once.js`.
 */

import { main } from './main';

main(process.argv.slice(2), process).then((code) => {
  process.exitCode = code;
});
