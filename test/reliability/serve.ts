import { spawn, type ChildProcess } from 'node:child_process';
import { CLI, ROOT, type ChildExit } from '../support/child.js';

const LISTENING = /Knowledge store listening on (http:\/\/\S+) \(data: /;

export interface CapturedServer {
  proc: ChildProcess;
  url: string;
  /** Everything the process has written so far, whole. */
  out: { stdout: string; stderr: string };
  exited: Promise<ChildExit>;
  /** SIGKILL unless it has exited already; waits for the exit. */
  kill(): Promise<ChildExit>;
}

/**
 * `knowledge-store serve --port 0` on `dataDir` as a child process with extra environment (e.g. LOG_LEVEL=debug,
 * which test/support/child.ts pins to warn), its stdout and stderr captured whole.
 */
export async function spawnServeWithEnv(dataDir: string, env: Record<string, string>): Promise<CapturedServer> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], {
    cwd: ROOT,
    env: { ...process.env, KNOWLEDGE_DATA_DIR: '', PORT: '', HOST: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out = { stdout: '', stderr: '' };
  proc.stdout?.setEncoding('utf8').on('data', (d: string) => (out.stdout += d));
  proc.stderr?.setEncoding('utf8').on('data', (d: string) => (out.stderr += d));
  const exited = new Promise<ChildExit>((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  const kill = async (): Promise<ChildExit> => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
    return exited;
  };
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve did not start within 15 s\n${out.stdout}${out.stderr}`)), 15_000);
      const onData = (): void => {
        const m = LISTENING.exec(out.stdout);
        if (m) {
          clearTimeout(timer);
          proc.stdout?.off('data', onData);
          resolve(m[1] as string);
        }
      };
      proc.stdout?.on('data', onData);
      void exited.then(({ code, signal }) => {
        clearTimeout(timer);
        reject(new Error(`serve exited (code ${code}, signal ${signal}) before listening\n${out.stdout}${out.stderr}`));
      });
    });
    return { proc, url, out, exited, kill };
  } catch (err) {
    await kill();
    throw err;
  }
}
