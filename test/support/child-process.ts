/**
 * Child processes of the tests that run the package's commands (`effectively-once local …`,
 * `replay`) as a user runs them.
 */
import { spawn } from 'node:child_process';

/** How a command ended, with its whole output. */
export interface CommandRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `command args` in `cwd` with exactly `env` (plus PATH and HOME) and resolves with its exit
 * code and output; rejects only when it cannot start.
 */
export function runCommand(
  command: string,
  args: readonly string[],
  cwd: string,
  env: NodeJS.ProcessEnv,
): Promise<CommandRun> {
  return new Promise((done, fail) => {
    const child = spawn(command, args, {
      cwd,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('error', fail);
    child.once('close', (code) => done({ code, stdout, stderr }));
  });
}

/** Whether a process with this pid exists (signal 0 sends nothing). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
