import { execFile } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import { GitCli } from '../../../src/storage/git/gitCli.js';
import { GitRunner } from '../../../src/storage/git/gitRunner.js';
import { forkExecArgv } from '../../../src/common/workerScript.js';
import { ensureBuilt, ROOT, spawnServe } from '../../support/child.js';
import { sleep } from '../../support/sleep.js';
import { tmpDir } from '../../support/tmp.js';

/** The pid of the parent of `pid` (from /proc). */
async function parentOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/^PPid:\s+(\d+)$/m.exec(status)?.[1]);
}

async function alive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A git that runs a shell (an alias) for `seconds`. */
const slowGit = (seconds: number): string[] => ['-c', `alias.slow=!sleep ${seconds}`, 'slow'];

/**
 * C git started by a small process of its own, not by the server: a spawn from the server forks the whole
 * server (5 ms of its event loop at 312 MiB of RSS, measured).
 */
describe('storage/git: the git runner process', function () {
  this.timeout(30_000);
  let runner: GitRunner;
  beforeEach(() => {
    runner = new GitRunner(silentLogger);
  });
  afterEach(() => runner.close());

  const run = (argv: string[], extra: { input?: string; timeoutMs?: number; signal?: AbortSignal } = {}) =>
    runner.run({ argv, env: process.env, timeoutMs: extra.timeoutMs ?? 10_000, maxBuffer: 1 << 20, ...extra });

  it('runs git in its own process, not in this one, and tells its exit code and output', async () => {
    await runner.start();
    const pid = runner.pid as number;
    expect(pid).to.be.a('number').and.not.equal(process.pid);
    const version = await run(['--version']);
    expect(version).to.include({ code: 0, killed: false, error: null });
    expect(version.stdout).to.match(/^git version /);
    // git's parent is the runner, not this process: read while git runs.
    const running = run(slowGit(1));
    await sleep(300);
    const gits = (await new Promise<string>((resolve) => execFile('pgrep', ['-P', String(pid), 'git'], (_err, out) => resolve(out)))).trim().split('\n').filter(Boolean);
    expect(gits.length, 'a git whose parent is the runner').to.equal(1);
    expect(await parentOf(Number(gits[0]))).to.equal(pid);
    expect((await running).code).to.equal(0);
    const failed = await run(['--git-dir', '/nonexistent/repo.git', 'rev-parse', 'HEAD']);
    expect(failed.code).to.equal(128);
    expect(failed.stderr).to.match(/not a git repository/);
    // An argument spawn refuses fails that run alone: the same runner answers the next.
    const refused = await run(['rev-parse', 'a\u0000b']);
    expect(refused.code).to.equal(null);
    expect(refused.error).to.match(/null bytes|ERR_INVALID_ARG_VALUE/);
    expect((await run(['--version'])).code).to.equal(0);
    expect(runner.pid).to.equal(pid);
  });

  it('feeds its input to git, and GitCli reads the same through it as without it', async () => {
    const hashed = await run(['hash-object', '--stdin'], { input: 'hello\n' });
    expect(hashed.stdout.trim()).to.equal('ce013625030ba8dba906f756967f9e9ca394464a');
    const { dir, cleanup } = await tmpDir('ks-runner');
    try {
      const viaRunner = new GitCli(process.env, runner);
      const here = new GitCli(process.env);
      expect((await viaRunner.run(['init', '--bare', '-q', `${dir}/r.git`])).code).to.equal(0);
      const counted = await viaRunner.countObjects(`${dir}/r.git`);
      expect(counted).to.deep.equal(await here.countObjects(`${dir}/r.git`));
      expect(await viaRunner.run(['--git-dir', `${dir}/none.git`, 'count-objects'])).to.deep.equal(await here.run(['--git-dir', `${dir}/none.git`, 'count-objects']));
    } finally {
      await cleanup();
    }
  });

  it('kills a git past its timeout or when its caller aborts', async () => {
    const slow = await run(slowGit(3), { timeoutMs: 200 });
    expect(slow).to.include({ code: null, killed: true });
    const abort = new AbortController();
    const started = Date.now();
    const aborted = run(slowGit(3), { signal: abort.signal });
    await sleep(200);
    abort.abort();
    expect(await aborted).to.include({ code: null, killed: true });
    expect(Date.now() - started).to.be.below(2_500);
    // git has exited, but what it left running holds its output open: the timeout ends that too.
    const leftBehind = Date.now();
    expect(await run(['-c', 'alias.bg=!sleep 3 & exit 0', 'bg'], { timeoutMs: 300 })).to.include({ code: null, killed: true });
    expect(Date.now() - leftBehind).to.be.below(2_500);
  });

  it('fails the runs in flight when it dies, and the next run starts another', async () => {
    await runner.start();
    const first = runner.pid as number;
    const inFlight = run(slowGit(2));
    await sleep(200);
    process.kill(first, 'SIGKILL');
    const lost = await inFlight;
    expect(lost.code).to.equal(null);
    expect(lost.error).to.equal('the git runner exited while git ran');
    const next = await run(['--version']);
    expect(next.code).to.equal(0);
    expect(runner.pid).to.be.a('number').and.not.equal(first);
  });

  it('ends with the process that started it, killed or stopped, and its gits with it', async () => {
    const { dir, cleanup } = await tmpDir('ks-runner-parent');
    try {
      for (const end of ['process.kill(process.pid, "SIGKILL")', 'await runner.close(); process.exit(0)']) {
        const file = join(dir, `parent-${end.length}.mts`);
        await writeFile(file, `
          import { execFileSync } from 'node:child_process';
          import { GitRunner } from ${JSON.stringify(join(ROOT, 'src/storage/git/gitRunner.ts'))};
          import { silentLogger } from ${JSON.stringify(join(ROOT, 'src/common/log.ts'))};
          const runner = new GitRunner(silentLogger);
          await runner.start();
          void runner.run({ argv: ['-c', 'alias.slow=!sleep 20', 'slow'], env: process.env, timeoutMs: 60000, maxBuffer: 65536 });
          await new Promise((r) => setTimeout(r, 300));
          // git's process group (git is its leader): git and the shell its alias started.
          const git = execFileSync('pgrep', ['-P', String(runner.pid)], { encoding: 'utf8' }).trim();
          const group = execFileSync('pgrep', ['-g', git], { encoding: 'utf8' }).trim().split('\\n').join(' ');
          process.stdout.write(String(runner.pid) + '\\n' + group + '\\n');
          ${end};
        `);
        const out = await new Promise<string>((resolve) => {
          execFile(process.execPath, ['--import', 'tsx', file], { cwd: ROOT }, (_err, stdout) => resolve(stdout));
        });
        const [runnerLine = '', groupLine = ''] = out.trim().split('\n');
        const pid = Number(runnerLine);
        expect(pid, out).to.be.above(0);
        const gitPids = groupLine.split(' ').filter(Boolean);
        expect(gitPids.length, `git and its alias's shell: ${out}`).to.be.at.least(2);
        const deadline = Date.now() + 3_000;
        while ((await alive(pid)) && Date.now() < deadline) await sleep(50);
        expect(await alive(pid), `the runner (${pid}) after: ${end}`).to.equal(false);
        for (const g of gitPids) {
          const gone = Date.now() + 2_000;
          while ((await alive(Number(g))) && Date.now() < gone) await sleep(50);
          expect(await alive(Number(g)), `its git ${g}`).to.equal(false);
        }
      }
    } finally {
      await cleanup();
    }
  });

  it('starts with the server\'s flags, less a debugger\'s port and an -e or -p script', () => {
    expect(forkExecArgv(['--import', 'tsx', '--input-type=module', '-e', 'run()', '--inspect=9229', '--max-old-space-size=4096'])).to.deep.equal(['--import', 'tsx', '--input-type=module', '--max-old-space-size=4096']);
    expect(forkExecArgv(['-p', '1+1', '--eval=x()', '--print=y', '--enable-source-maps'])).to.deep.equal(['--enable-source-maps']);
  });
});

/** Children of `pid` whose command matches `pattern` (pgrep -f), or whose name is `git` (pgrep -x). */
async function childrenOf(pid: number, match: string[]): Promise<number[]> {
  const out = await new Promise<string>((resolve) => execFile('pgrep', ['-P', String(pid), ...match], (_err, stdout) => resolve(stdout)));
  return out.trim().split('\n').filter(Boolean).map(Number);
}

describe('storage/git: the built server starts its gits through its git runner', function () {
  this.timeout(60_000);
  before(() => ensureBuilt());

  it('a mirror push runs under the runner, not the server; a killed server leaves neither the runner nor the push', async () => {
    const { dir, cleanup } = await tmpDir('ks-runner-serve');
    // The push's ssh is a shell that waits: the push stays running while we look at who started it.
    const serve = await spawnServe(join(dir, 'data'), 15_000, { KNOWLEDGE_REPLICATE: 'ssh://mirror.invalid/{org}.git', GIT_SSH_COMMAND: 'sleep 30;:' });
    try {
      const deadline = Date.now() + 10_000;
      let runner: number[] = [];
      let gits: number[] = [];
      while (Date.now() < deadline) {
        runner = await childrenOf(serve.pid, ['-f', 'gitRunnerChild']);
        gits = runner.length === 1 ? await childrenOf(runner[0] as number, ['-x', 'git']) : [];
        if (gits.length > 0) break;
        await sleep(100);
      }
      expect(runner, 'one git runner, a child of the server').to.have.lengthOf(1);
      expect(gits.length, "the start push's git, a child of the runner").to.equal(1);
      expect(await childrenOf(serve.pid, ['-x', 'git']), 'no git started by the server itself').to.deep.equal([]);
      // Everything in the push's group: git, and the ssh shell it started.
      const group = (await new Promise<string>((resolve) => execFile('pgrep', ['-g', String(gits[0])], (_e, o) => resolve(o)))).trim().split('\n').filter(Boolean).map(Number);
      expect(group.length).to.be.at.least(2);
      await serve.kill('SIGKILL');
      for (const pid of [...runner, ...group]) {
        const gone = Date.now() + 3_000;
        while ((await alive(pid)) && Date.now() < gone) await sleep(50);
        expect(await alive(pid), `process ${pid} after the server was killed`).to.equal(false);
      }
    } finally {
      await serve.kill('SIGKILL');
      await cleanup();
    }
  });
});
