import type { GitExecArgs, GitOutcome } from './gitExec.js';

/** What crosses the channel between the server and its git runner process (gitRunner.ts, gitRunnerChild.ts). */

export interface RunRequest extends GitExecArgs {
  type: 'run';
  id: number;
}

/** Kill the git of request `id` (its caller's AbortSignal fired). */
export interface KillRequest {
  type: 'kill';
  id: number;
}

export type ToRunner = RunRequest | KillRequest;

export interface RunResult extends GitOutcome {
  type: 'result';
  id: number;
}

export type FromRunner = RunResult | { type: 'ready' };

/** Run `id` ended with no git outcome to tell (the runner gone, an argument spawn refused): `error` says why. */
export function failedRun(id: number, error: string): RunResult {
  return { type: 'result', id, code: null, stdout: '', stderr: '', killed: false, error };
}
