import { spawn } from 'node:child_process';
import { promises as nodeFs } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { Config } from '../../src/app/config.js';
import { startTestServer, type TestServer } from './server.js';

/**
 * `knowledge-store …` as a child process (test/cliItems.test.ts, test/cliChanges.test.ts, test/cliAdmin.test.ts):
 * results on stdout, the server's own message on stderr and exit 1 when it refuses, exit 2 for a wrong command
 * line. Runs the build in dist/ (`npm test` builds first).
 */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const CLI = join(ROOT, 'dist/src/cli/main.js');

export interface Run {
  code: number | null;
  stdout: string;
  /** stdout as the bytes written (`item download` to stdout). */
  stdoutBytes: Buffer;
  stderr: string;
}

/** Fails at once, saying why, when the build is not there. */
export async function requireBuilt(): Promise<void> {
  await nodeFs.access(CLI).catch(() => {
    throw new Error(`${CLI} is missing: run \`npm run build\` (npm test builds first)`);
  });
}

export function cli(args: string[], options: { env?: Record<string, string | undefined>; input?: string | Buffer; nodeArgs?: string[] } = {}): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, LOG_LEVEL: '' };
  delete env.KNOWLEDGE_URL;
  delete env.KNOWLEDGE_KEY;
  delete env.KNOWLEDGE_DATA_DIR;
  for (const [name, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[name];
    else env[name] = value;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...(options.nodeArgs ?? []), CLI, ...args], { cwd: ROOT, env, stdio: ['pipe', 'pipe', 'pipe'], timeout: 20_000 });
    const out: Buffer[] = [];
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const stdoutBytes = Buffer.concat(out);
      resolve({ code, stdout: stdoutBytes.toString('utf8'), stdoutBytes, stderr });
    });
    child.stdin.end(options.input ?? '');
  });
}

/** `ok` and `fails` against the server and key `env()` names (KNOWLEDGE_URL, KNOWLEDGE_KEY) when called. */
export function cliAgainst(env: () => Record<string, string>): {
  ok(args: string[], options?: { key?: string; input?: string | Buffer }): Promise<string>;
  fails(args: string[], code: number, message: RegExp, options?: { env?: Record<string, string | undefined>; input?: string | Buffer }): Promise<Run>;
} {
  return {
    /** Runs with the admin key (or `key`) in the environment; must succeed; returns stdout. */
    async ok(args, options = {}) {
      const run = await cli(args, { env: { ...env(), ...(options.key ? { KNOWLEDGE_KEY: options.key } : {}) }, input: options.input });
      expect(run.code, `${args.join(' ')}\nstderr: ${run.stderr}`).to.equal(0);
      return run.stdout;
    },
    /** Must fail with `code`: nothing on stdout, the message on stderr, no stack. */
    async fails(args, code, message, options = {}) {
      const run = await cli(args, { env: { ...env(), ...options.env }, input: options.input });
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).to.equal(code);
      expect(run.stdout).to.equal('');
      expect(run.stderr).to.match(message);
      expect(run.stderr).not.to.match(/\n\s+at .+:\d+:\d+/);
      return run;
    },
  };
}

/** A port nothing listens on: one the OS just gave out and took back. */
export async function closedPort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const address = probe.address();
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/**
 * A real server for the describe block it is called in (started before its tests, closed after them), with `ok`
 * and `fails` against it under its admin key, and a writer key. `config` as startTestServer takes it (the webhook
 * commands' tests deliver to 127.0.0.1, a private address the default refuses).
 */
export function cliServer(config?: Partial<Config>): ReturnType<typeof cliAgainst> & { readonly server: TestServer; readonly writerKey: string } {
  let server: TestServer | undefined;
  let writerKey = '';
  let env: Record<string, string> = {};
  before(async () => {
    await requireBuilt();
    server = await startTestServer({ config });
    env = { KNOWLEDGE_URL: server.url, KNOWLEDGE_KEY: server.adminKey };
    writerKey = await server.key('writer');
  });
  after(async () => {
    await server?.close();
  });
  return {
    ...cliAgainst(() => env),
    get server(): TestServer {
      if (!server) throw new Error('the server starts before the tests');
      return server;
    },
    get writerKey(): string {
      return writerKey;
    },
  };
}
