/**
 * The command-line frame of the scripts (`npm start`, `npm run proof`): options parsed once, the
 * usage printed for `--help` or a bad option, and the exit code set from the run's verdict.
 */

/**
 * The options `parse` reads from the command line. On `--help` (`parse` answers `undefined`) it
 * prints `usage` and exits 0; on a bad option (`parse` throws) the error and `usage`, and exits 2.
 */
export function parseOrExit<T>(
  parse: (argv: readonly string[]) => T | undefined,
  usage: string,
  argv: readonly string[] = process.argv.slice(2),
): T {
  let options: T | undefined;
  try {
    options = parse(argv);
  } catch (error) {
    console.error(`${(error as Error).message}\n\n${usage}`);
    process.exit(2);
  }
  if (options === undefined) {
    console.log(usage);
    process.exit(0);
  }
  return options;
}

/** Sets the exit code when `run` settles: 0 when it resolves `true`, 1 when `false` or when it rejects. */
export function exitWhenDone(run: Promise<boolean>): void {
  run.then(
    (ok) => {
      process.exitCode = ok ? 0 : 1;
    },
    (error: unknown) => {
      console.error(error instanceof Error ? error.message : error);
      process.exitCode = 1;
    },
  );
}
