/**
 * The repository's local AWS harness: the package's embedded emulator (`cli/local/emulator.ts`)
 * with its home in the project-local `.local/` (venv and logs), where CI installs it.
 *
 * Used by the integration tests' global setup, by `npm start`, by `npm run local:aws` and by any
 * later script that needs a local AWS endpoint.
 */
import { join, resolve } from 'node:path';
import {
  type EnsureMiniStackOptions,
  ensureMiniStack as ensureMiniStackIn,
  type LocalAws,
  type MiniStackInstallation,
  type StartLocalAwsOptions,
  startLocalAws as startLocalAwsIn,
} from '../../cli/local/emulator';

export {
  DEFAULT_REGION,
  LOCAL_CREDENTIALS,
  type LocalAws,
  type LocalAwsCredentials,
  localAwsEnv,
  MINISTACK_VERSION,
  type MiniStackInstallation,
  sdkClientConfig,
} from '../../cli/local/emulator';

/** The project root: the directory that holds `scripts/`. */
export function projectRoot(): string {
  return resolve(__dirname, '..', '..');
}

/** Directory for MiniStack logs: `.local/logs` under the project root. */
export function logsDir(root: string = projectRoot()): string {
  return join(root, '.local', 'logs');
}

/** Where the harness keeps the emulator: `<project root>/.local`. */
interface ProjectHome {
  /**
   * Project root holding `.local/` (venv and logs).
   * @default the directory that holds `scripts/`
   */
  readonly root?: string;
}

/** {@link ensureMiniStackIn | ensureMiniStack} with the venv in `.local/venv` under the project root. */
export function ensureMiniStack(
  options: Omit<EnsureMiniStackOptions, 'home'> & ProjectHome = {},
): Promise<MiniStackInstallation> {
  const { root, ...rest } = options;
  return ensureMiniStackIn({ ...rest, home: join(root ?? projectRoot(), '.local') });
}

/** {@link startLocalAwsIn | startLocalAws} with the venv and logs in `.local/` under the project root. */
export function startLocalAws(
  options: Omit<StartLocalAwsOptions, 'home'> & ProjectHome = {},
): Promise<LocalAws> {
  const { root, ...rest } = options;
  return startLocalAwsIn({ ...rest, home: join(root ?? projectRoot(), '.local') });
}
