/**
 * The help of `effectively-once local` and of each of its subcommands, and the "did you mean"
 * of a misspelt name.
 */

/** The `local` subcommands. */
export const LOCAL_SUBCOMMANDS = ['up', 'deploy', 'destroy', 'logs', 'down'] as const;

/** One `local` subcommand. */
export type LocalSubcommand = (typeof LOCAL_SUBCOMMANDS)[number];

const CACHE_DIR_OPTION = `  --cache-dir DIR      this app's emulator state, logs and MiniStack install all in DIR
                       (default: the install in $XDG_CACHE_HOME/effectively-once or
                       ~/.cache/effectively-once, shared by your apps, and this app's files in
                       apps/<app directory name>-<hash>/ there)`;

const ENDPOINT_NOTE = `With AWS_ENDPOINT_URL set to another endpoint (LocalStack, a container), it uses that endpoint
and starts or stops nothing.`;

/** Help text of `effectively-once local`. */
export const LOCAL_USAGE = `Usage: effectively-once local <up|deploy|destroy|logs|down> [options]

Runs your CDK app (the cdk.json in the current directory) on a local AWS emulator of its own.

  up                   start this app's emulator (MiniStack) in the background, installing it
                       into the per-user cache on first use; prints the export line for your shell
                       (eval "$(effectively-once local up)"); does nothing when it already runs
  deploy [stack ...]   cdk synth and deploy this app to its emulator (your project's aws-cdk),
                       showing the app's synth warnings, leaving out what the emulator rejects
                       (metric-math alarms), then re-applying what it drops (DynamoDB TTL and
                       point-in-time recovery, SQS redrive policies)
  destroy [stack ...]  delete this app's stacks from its emulator, dependents first
  logs [function ...]  what this app's functions printed, and their failed invocations (a
                       handler's start-up error among them), from the emulator's log
  down                 stop the emulator \`local up\` started for this app

Options:
  --app <command>      deploy: CDK app command (default: the "app" of cdk.json)
  -c, --context k=v    deploy: CDK context value (repeatable)
  --skip-fixups        deploy: do not re-apply what the emulator dropped
  --failures           logs: failed invocations only
${CACHE_DIR_OPTION}
  -h, --help           show this help

Run \`effectively-once local <subcommand> --help\` for one subcommand.
${ENDPOINT_NOTE} Stack names are those of cdk.out.local/, the assembly of the last local deploy;
the CDK CLI's output goes to a log file named on failure.
`;

const SUBCOMMAND_USAGE: Readonly<Record<LocalSubcommand, string>> = {
  up: `Usage: effectively-once local up [--cache-dir DIR]

Starts this app's own emulator (MiniStack, installed on first use, about 10 s) in the background
on a free 127.0.0.1 port, and prints the line that points your shell at it:

  eval "$(effectively-once local up)"

Run again in the same app, it prints the same line and starts nothing. Each app (each directory
with a cdk.json) gets its own emulator; \`local down\` stops it.

Options:
${CACHE_DIR_OPTION}
  -h, --help           show this help

${ENDPOINT_NOTE}
`,
  deploy: `Usage: effectively-once local deploy [stack ...] [options]

Synthesizes this app with your project's aws-cdk into cdk.out.local/, prints the app's synth
warnings and errors, leaves out what the emulator's CloudFormation rejects (metric-math alarms and
what refers to them, named on the terminal), deploys to this app's emulator (all stacks, or those
named; * wildcards), prints the stack outputs as Stack.Key = value, and re-applies what the
emulator dropped (DynamoDB TTL and point-in-time recovery, SQS redrive policies).

Options:
  --app <command>      CDK app command (default: the "app" of cdk.json)
  -c, --context k=v    CDK context value (repeatable)
  --skip-fixups        do not re-apply what the emulator dropped
${CACHE_DIR_OPTION}
  -h, --help           show this help

${ENDPOINT_NOTE}
`,
  destroy: `Usage: effectively-once local destroy [stack ...] [--cache-dir DIR]

Deletes this app's stacks from its emulator, dependents first: those of cdk.out.local/ (the
assembly of the last local deploy), or those named.

Options:
${CACHE_DIR_OPTION}
  -h, --help           show this help

${ENDPOINT_NOTE}
`,
  logs: `Usage: effectively-once local logs [function ...] [--failures] [--cache-dir DIR]

Prints what this app's functions printed on its emulator (their JSON log lines, metrics lines
included) and each failed invocation with its error type and message, oldest first, from the
emulator's own log file: a handler that fails its cold start (INVALID_OPTIONS naming the option)
leaves its messages in flight and says why only there. Name functions by part of their name to
see only theirs. The log file's path is printed first; \`local up\` started it.

Options:
  --failures           failed invocations only
${CACHE_DIR_OPTION}
  -h, --help           show this help
`,
  down: `Usage: effectively-once local down [--cache-dir DIR]

Stops the emulator \`local up\` started for this app (everything deployed to it is gone), and
nothing else: not another app's, not one AWS_ENDPOINT_URL names.

Options:
${CACHE_DIR_OPTION}
  -h, --help           show this help
`,
};

/** The help of one subcommand, or of `local` as a whole. */
export function localUsage(subcommand?: LocalSubcommand): string {
  return subcommand ? SUBCOMMAND_USAGE[subcommand] : LOCAL_USAGE;
}

/**
 * The candidate a misspelt `word` most likely meant (at most two edits away, transpositions
 * counting as one), or `undefined`.
 *
 * @example
 * closestName('lcoal', ['local', 'replay']); // 'local'
 */
export function closestName(word: string, candidates: readonly string[]): string | undefined {
  let best: { name: string; distance: number } | undefined;
  for (const name of candidates) {
    const distance = editDistance(word.toLowerCase(), name);
    if (distance <= 2 && distance < word.length && (!best || distance < best.distance)) {
      best = { name, distance };
    }
  }
  return best?.name;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  );
  const at = (i: number, j: number) => rows[i]?.[j] ?? Number.POSITIVE_INFINITY;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let distance = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        distance = Math.min(distance, at(i - 2, j - 2) + 1);
      }
      (rows[i] as number[])[j] = distance;
    }
  }
  return at(a.length, b.length);
}
