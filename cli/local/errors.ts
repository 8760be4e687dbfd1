/** Codes of {@link LocalDeployError}. */
export type LocalDeployErrorCode =
  | 'ENDPOINT_UNREACHABLE'
  | 'CDK_COMMAND_FAILED'
  | 'OUTPUTS_UNREADABLE'
  | 'FIXUP_FAILED'
  | 'DESTROY_FAILED'
  | 'STACKS_UNKNOWN'
  | 'NO_EMULATOR';

/**
 * A local deploy, fix-up or teardown that failed. Recognise it by `code`, not `instanceof`.
 * `logFile` names the CDK log when the CDK CLI was involved.
 */
export class LocalDeployError extends Error {
  override readonly name = 'LocalDeployError';

  constructor(
    readonly code: LocalDeployErrorCode,
    message: string,
    options: { readonly cause?: unknown; readonly logFile?: string } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.logFile = options.logFile;
  }

  readonly logFile: string | undefined;
}
