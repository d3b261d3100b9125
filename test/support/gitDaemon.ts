import { spawn, type ChildProcess } from 'node:child_process';
import { createServer, connect } from 'node:net';
import { git } from './git.js';
import { sleep } from './sleep.js';

/** A port free now on 127.0.0.1 (taken by the OS, then let go). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function accepting(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

/**
 * A real git server: `git daemon` on 127.0.0.1 serving every bare repository under `base`, pushes allowed
 * (receive-pack). `stop` and `start` take it down and bring it back on the same port.
 */
export class GitDaemon {
  private child: ChildProcess | null = null;

  private constructor(
    readonly base: string,
    readonly port: number,
  ) {}

  static async start(base: string): Promise<GitDaemon> {
    const daemon = new GitDaemon(base, await freePort());
    await daemon.start();
    return daemon;
  }

  /** `git://127.0.0.1:<port>/<name>` */
  url(name: string): string {
    return `git://127.0.0.1:${this.port}/${name}`;
  }

  /** Makes an empty bare repository `name` (main as its HEAD, as a mirror should be made). */
  async create(name: string): Promise<string> {
    const dir = `${this.base}/${name}`;
    await git(['init', '--quiet', '--bare', '-b', 'main', dir]);
    return dir;
  }

  async start(): Promise<void> {
    const argv = ['daemon', '--export-all', '--enable=receive-pack', '--reuseaddr', '--informative-errors', `--base-path=${this.base}`, '--listen=127.0.0.1', `--port=${this.port}`, this.base];
    const child = spawn('git', argv, { stdio: 'ignore' });
    this.child = child;
    for (let i = 0; i < 200; i++) {
      if (child.exitCode !== null) throw new Error(`git daemon exited with ${child.exitCode}`);
      if (await accepting(this.port)) return;
      await sleep(25);
    }
    throw new Error('git daemon did not start listening');
  }

  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
    for (let i = 0; i < 200 && (await accepting(this.port)); i++) await sleep(25);
  }
}

/** Polls `check` until it returns a value (not undefined), or fails after `timeoutMs` with `what`. */
export async function eventually<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined) return value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${last ? `: ${String(last)}` : ''}`);
    await sleep(50);
  }
}
