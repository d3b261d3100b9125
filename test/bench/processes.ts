import { spawn, type ChildProcess } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { CLI, ROOT } from '../support/child.js';
import { onServerCpu, type Pinning } from './machine.js';

/**
 * The long-running contenders, each its own process on the server CPU: our
 * server (`knowledge-store serve`, the build in dist/, as `npm start` runs it)
 * and the bare Koa anchor. Both print their URL once they accept connections.
 */
export interface Served {
  pid: number;
  url: string;
  /** Milliseconds from spawn to the "listening" line. */
  listeningMs: number;
  /** performance.now() at spawn. */
  spawnedAt: number;
  output(): string;
  /** SIGTERM (graceful: the server flushes and releases its data dir), SIGKILL after 20 s. */
  stop(): Promise<void>;
}

/**
 * Our server: rate limits off (a benchmark is not abuse: it measures what the server does for one key driving it
 * flat out, which the per-key request and search-time quotas exist to stop), everything else the defaults. Logs at info, as
 * deployed: one access line per request (contract §12), and the lines that explain figures (organization opened, repacked).
 */
export const SERVER_ENV: Record<string, string> = {
  LOG_LEVEL: 'info',
  // What `npm start`, the Docker image and the systemd unit set (test/release/launchEnvironment.test.ts): the
  // bench measures the server as they run it.
  MALLOC_ARENA_MAX: '2',
  KNOWLEDGE_RATE_LIMIT_PER_KEY: '0',
  KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES: '0',
  KNOWLEDGE_SEARCH_MS_PER_KEY: '0',
};

/** `env`: settings on top of SERVER_ENV (KNOWLEDGE_SEARCH for the search phase); `cli`: another build's CLI (getCost.ts --baseline). */
export function startOurServer(args: { dataDir: string; pinning: Pinning; env?: Record<string, string>; cli?: string }): Promise<Served> {
  const { cmd, args: argv } = onServerCpu(args.pinning, process.execPath, [args.cli ?? CLI, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', args.dataDir]);
  return startListening({
    cmd,
    argv,
    env: { ...SERVER_ENV, KNOWLEDGE_DATA_DIR: '', PORT: '', HOST: '', ...args.env },
    listening: /Knowledge store listening on (http:\/\/\S+) \(data: /,
    what: 'knowledge-store serve',
  });
}

export function startBareKoa(args: { key: string; pinning: Pinning }): Promise<Served> {
  const script = new URL('./anchors/bareKoa.ts', import.meta.url).pathname;
  const { cmd, args: argv } = onServerCpu(args.pinning, process.execPath, ['--import', 'tsx', script, args.key]);
  return startListening({ cmd, argv, env: { NODE_ENV: 'production' }, listening: /^listening (http:\/\/\S+)$/m, what: 'bare Koa anchor' });
}

async function startListening(args: { cmd: string; argv: string[]; env: Record<string, string>; listening: RegExp; what: string }): Promise<Served> {
  const spawnedAt = performance.now();
  const proc: ChildProcess = spawn(args.cmd, args.argv, { cwd: ROOT, env: { ...process.env, ...args.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  proc.stderr?.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<void>((resolve) => {
    if (proc.exitCode !== null || proc.signalCode !== null) resolve();
    else proc.once('exit', () => resolve());
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => {
      proc.kill('SIGKILL');
      reject(new Error(`${args.what} did not start within 120 s:\n${out}`));
    }, 120_000);
    const onData = (): void => {
      const m = args.listening.exec(out);
      if (!m) return;
      clearTimeout(timer);
      proc.stdout?.off('data', onData);
      resolve(m[1] as string);
    };
    proc.stdout?.on('data', onData);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`${args.what} exited (code ${proc.exitCode}, signal ${proc.signalCode}) before listening:\n${out}`));
    });
  });
  const listeningMs = performance.now() - spawnedAt;
  return {
    pid: proc.pid as number,
    url,
    listeningMs,
    spawnedAt,
    output: () => out,
    stop: async () => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      proc.kill('SIGTERM');
      const timer = setTimeout(() => proc.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
