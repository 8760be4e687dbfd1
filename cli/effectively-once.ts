#!/usr/bin/env node
/**
 * Entry point of the `effectively-once` command. Run it with `npx tsx cli/effectively-once.ts`
 * in this repository; the published package runs the compiled `dist/cli/effectively-once.js`.
 */

import { main } from './main';

// The AWS SDK warns, once per copy of it loaded (this process's and every command it runs), that
// its releases after January 2027 need Node.js 22: a notice about the SDK's future, repeated
// several times over a command's own output. The package states the Node.js it needs; a user
// who wants the SDK's notice sets the variable to `false`.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

main(process.argv.slice(2), process).then((code) => {
  process.exitCode = code;
});
