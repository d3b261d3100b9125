import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cp, mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { ROOT } from '../support/child.js';
import { PRODUCTION_INSTALL } from '../support/release.js';
import { api } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';

const run = promisify(execFile);

/**
 * Contract §12: `npm ci --omit=dev && npm start` works, with no compiler. The artifact is made as the
 * README says (`npm run release`), unpacked in a temporary directory, installed with the production
 * command the Dockerfile runs (npm's cache first: CI's own `npm ci` has filled it), and started with `npm start`.
 */
describe('production install: the release artifact, npm ci --omit=dev, npm start', function () {
  this.timeout(180_000);
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let pkg: string;
  let server: ChildProcess | undefined;

  before(async () => {
    tmp = await tmpDir('ks-release');
  });
  after(async () => {
    if (server?.pid && server.exitCode === null) process.kill(-server.pid, 'SIGKILL');
    await tmp.cleanup();
  });

  it('npm run release makes a tarball with dist/ and a lockfile, and no sources', async () => {
    const { stdout } = await run('npm', ['run', '--silent', 'release', '--', tmp.dir], { cwd: ROOT });
    const tarball = stdout.trim().split('\n').pop() as string;
    expect(tarball).to.match(/knowledge-store-\d+\.\d+\.\d+\.tgz$/);
    await run('tar', ['-xzf', tarball, '-C', tmp.dir]);
    pkg = join(tmp.dir, 'package');
    for (const file of ['package.json', 'npm-shrinkwrap.json', 'scripts/build.mjs', 'dist/src/cli/main.js', 'dist/dashboard/app.js', 'dist/dashboard/index.html']) {
      expect(existsSync(join(pkg, file)), file).to.equal(true);
    }
    for (const absent of ['src', 'test', 'dist/test', 'package-lock.json']) expect(existsSync(join(pkg, absent)), absent).to.equal(false);
  });

  it(`${PRODUCTION_INSTALL} installs the production dependencies only (no typescript, tsx or esbuild)`, async () => {
    const [cmd, ...args] = PRODUCTION_INSTALL.split(' ') as [string, ...string[]];
    await run(cmd, [...args, '--prefer-offline'], { cwd: pkg, env: { ...process.env, CI: 'true' } });
    expect(existsSync(join(pkg, 'node_modules', 'koa'))).to.equal(true);
    for (const dev of ['typescript', 'tsx', 'esbuild', 'mocha']) expect(existsSync(join(pkg, 'node_modules', dev)), dev).to.equal(false);
  });

  it('knowledge-store --version', async () => {
    const { version } = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const { stdout } = await run('npx', ['--no-install', 'knowledge-store', '--version'], { cwd: pkg });
    expect(stdout.trim()).to.equal(version);
  });

  it('npm start serves: /healthz, the dashboard, and a PUT then GET with the admin key it printed', async () => {
    const dataDir = join(tmp.dir, 'data');
    server = spawn('npm', ['start'], {
      cwd: pkg,
      env: { ...process.env, PORT: '0', HOST: '127.0.0.1', KNOWLEDGE_DATA_DIR: dataDir, LOG_LEVEL: 'warn' },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: npm runs the server as a child, and the test stops them together.
      detached: true,
    });
    let stdout = '';
    let stderr = '';
    server.stdout?.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    server.stderr?.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const exited = new Promise<number | null>((resolve) => server?.once('exit', (code) => resolve(code)));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`npm start did not listen\n${stdout}\n${stderr}`)), 60_000);
      server?.stdout?.on('data', () => {
        const m = /Knowledge store listening on (http:\/\/\S+)/.exec(stdout);
        if (m) (clearTimeout(timer), resolve(m[1] as string));
      });
      void exited.then((code) => reject(new Error(`npm start exited (${code})\n${stdout}\n${stderr}`)));
    });
    const key = /^Admin API key for organization "default": (ks_\S+)$/m.exec(stdout)?.[1] as string;
    expect(key, stdout).to.match(/^ks_/);
    // The server npm started has the start script's two malloc arenas (launchEnvironment.test.ts): read from
    // /proc, the node process of npm's process group that runs the CLI.
    const serverEnv = await environOf(await cliProcessIn(server.pid as number));
    expect(serverEnv.MALLOC_ARENA_MAX).to.equal('2');

    const health = await fetch(`${url}/healthz`);
    expect(health.status).to.equal(200);
    expect(await health.json()).to.deep.equal({ success: true });
    expect((await fetch(`${url}/dashboard/`)).status).to.equal(200);
    const put = await api(`${url}/api/v1/knowledge/items/docs/guide.md`, { method: 'PUT', key, body: { content: '# Guide\n' } });
    expect(put.status, JSON.stringify(put.body)).to.equal(200);
    const got = await api(`${url}/api/v1/knowledge/items/docs/guide.md`, { key });
    expect(got.status).to.equal(200);
    expect((got.body?.data?.item as { content: string }).content).to.equal('# Guide\n');

    process.kill(-(server.pid as number), 'SIGTERM');
    await exited;
  });
});

/** The pid of the process in process group `group` whose command line runs dist/src/cli/main.js (Linux's /proc). */
async function cliProcessIn(group: number): Promise<number> {
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    // Fields after the command's closing parenthesis: state, ppid, pgrp.
    const pgrp = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[2]);
    if (pgrp !== group) continue;
    const cmdline = await readFile(`/proc/${name}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.split('\0').some((arg) => arg.endsWith('dist/src/cli/main.js'))) return Number(name);
  }
  throw new Error(`no process of group ${group} runs dist/src/cli/main.js`);
}

async function environOf(pid: number): Promise<Record<string, string>> {
  const text = await readFile(`/proc/${pid}/environ`, 'utf8');
  return Object.fromEntries(text.split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]));
}

/** scripts/build.mjs where no compiler is installed: a source checkout is refused with what to do, never half-built. */
describe('npm run build without TypeScript installed', function () {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  const build = (): Promise<{ code: number; stderr: string }> =>
    run(process.execPath, [join(tmp.dir, 'scripts', 'build.mjs')], { cwd: tmp.dir }).then(
      () => ({ code: 0, stderr: '' }),
      (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
    );

  before(async () => {
    // A checkout without node_modules (so without typescript): package.json, the script, one source.
    tmp = await tmpDir('ks-nodev');
    await cp(join(ROOT, 'scripts', 'build.mjs'), join(tmp.dir, 'scripts', 'build.mjs'));
    await writeFile(join(tmp.dir, 'package.json'), '{"name":"x","type":"module"}');
    await mkdir(join(tmp.dir, 'src', 'cli'), { recursive: true });
    await writeFile(join(tmp.dir, 'src', 'cli', 'main.ts'), 'export {};\n');
  });
  after(() => tmp.cleanup());

  it('no dist/: exit 1, naming `npm ci` and the release artifact', async () => {
    const { code, stderr } = await build();
    expect(code).to.equal(1);
    expect(stderr).to.include('dist/src/cli/main.js is missing, and TypeScript is not installed');
    expect(stderr).to.include('`npm ci` (with dev dependencies), then `npm start`');
    expect(stderr).to.include('`npm run release`');
  });

  it('a dist/ older than the sources: exit 1; a current one: exit 0, nothing compiled', async () => {
    for (const out of ['dist/src/cli/main.js', 'dist/dashboard/app.js']) {
      await mkdir(join(tmp.dir, out, '..'), { recursive: true });
      await writeFile(join(tmp.dir, out), '');
    }
    const past = new Date(Date.now() - 60_000);
    await utimes(join(tmp.dir, 'dist/src/cli/main.js'), past, past);
    const stale = await build();
    expect(stale.code).to.equal(1);
    expect(stale.stderr).to.include(`dist/ is older than ${join('src', 'cli', 'main.ts')}`);
    const now = new Date();
    await utimes(join(tmp.dir, 'dist/src/cli/main.js'), now, now);
    expect(await build()).to.deep.equal({ code: 0, stderr: '' });
  });
});
