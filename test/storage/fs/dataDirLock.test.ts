import { spawn, type ChildProcess } from 'node:child_process';
import { promises as nodeFs } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'chai';
import { lockDataDir, serverPid } from '../../../src/storage/fs/dataDirLock.js';
import { DataDirInUse } from '../../../src/storage/errors.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { CLI, ensureBuilt, killAllChildren, ROOT, spawnServe } from '../../support/child.js';
import { rejection } from '../../support/records.js';
import { api } from '../../support/server.js';
import { sleep } from '../../support/sleep.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * One server per data directory, held by a lock the kernel releases when the
 * holder dies: a restart after a kill always succeeds, whatever became of the
 * old process (dead, a zombie nobody reaps, its pid given to someone else), and
 * a live server still refuses a second one.
 */

const fs = nodeFs as unknown as FsPromises;
const RESTART_CYCLES = Number(process.env.RESTART_CYCLES ?? 50);
const LISTENING = /Knowledge store listening on (http:\/\/\S+) \(data: /;

describe('storage/dataDirLock', function () {
  this.timeout(30_000);
  const cleanups: Array<() => Promise<void>> = [];
  const others: ChildProcess[] = [];
  const newDataDir = async (): Promise<string> => {
    const tmp = await tmpDir('ks-dirlock');
    cleanups.push(tmp.cleanup);
    return tmp.dir;
  };
  /** A live process that has nothing to do with the store (its pid is what a stale pid file might name). */
  const unrelatedProcess = (): ChildProcess => {
    const proc = spawn('sleep', ['600'], { stdio: 'ignore' });
    others.push(proc);
    return proc;
  };

  after(async () => {
    for (const proc of others) proc.kill('SIGKILL');
    await killAllChildren();
    await Promise.all(cleanups.map((c) => c()));
  });

  describe('in process', () => {
    it('refuses a second holder with DataDirInUse naming the holder, after a short wait; free again after release', async () => {
      const dataDir = await newDataDir();
      expect(await serverPid(fs, dataDir)).to.equal(null);
      const held = await lockDataDir(fs, dataDir);
      expect(await serverPid(fs, dataDir)).to.equal(process.pid);
      expect((await nodeFs.readFile(join(dataDir, 'server.lock'), 'utf8')).trim()).to.equal(String(process.pid));
      const started = Date.now();
      const err = await rejection(lockDataDir(fs, dataDir));
      const waited = Date.now() - started;
      expect(err).to.be.instanceOf(DataDirInUse);
      expect((err as DataDirInUse).message).to.equal(`Data directory ${dataDir} is in use by another knowledge-store server (pid ${process.pid})`);
      expect(waited, 'polls about a second, no more').to.be.within(900, 2500);
      await held.release();
      expect(await serverPid(fs, dataDir)).to.equal(null);
      expect(await nodeFs.readdir(dataDir), 'the pid file goes with the lock').to.deep.equal([]);
      const again = await lockDataDir(fs, dataDir);
      await again.release();
    });

    it('is not held by a server.lock that names a live unrelated process', async () => {
      const dataDir = await newDataDir();
      const other = unrelatedProcess();
      await nodeFs.writeFile(join(dataDir, 'server.lock'), `${other.pid}\n`);
      expect(await serverPid(fs, dataDir), 'no server runs here').to.equal(null);
      const lock = await lockDataDir(fs, dataDir, { waitMs: 0 });
      expect(await serverPid(fs, dataDir)).to.equal(process.pid);
      await lock.release();
    });

    it('names the directory, not the path: a second path to the same directory is refused too', async () => {
      const dataDir = await newDataDir();
      const alias = `${dataDir}-alias`;
      await nodeFs.symlink(dataDir, alias);
      cleanups.push(() => nodeFs.rm(alias, { force: true }));
      const lock = await lockDataDir(fs, dataDir);
      expect(await rejection(lockDataDir(fs, alias, { waitMs: 0 }))).to.be.instanceOf(DataDirInUse);
      expect(await serverPid(fs, `${dataDir}/../${dataDir.split('/').pop() as string}`)).to.equal(process.pid);
      await lock.release();
    });

    describe('socket-file variant (platforms without abstract sockets)', () => {
      const platform = 'darwin';

      it('refuses a second holder and frees the directory at release', async () => {
        const dataDir = await newDataDir();
        const lock = await lockDataDir(fs, dataDir, { platform });
        expect(await serverPid(fs, dataDir, { platform })).to.equal(process.pid);
        expect(await rejection(lockDataDir(fs, dataDir, { platform, waitMs: 0 }))).to.be.instanceOf(DataDirInUse);
        await lock.release();
        expect(await serverPid(fs, dataDir, { platform })).to.equal(null);
        await (await lockDataDir(fs, dataDir, { platform, waitMs: 0 })).release();
      });

      it('replaces a socket file nobody listens on; of two starters that find it stale, exactly one wins', async () => {
        const dataDir = await newDataDir();
        // What a killed holder leaves: a name nobody listens on (connect is refused).
        await nodeFs.writeFile(join(dataDir, 'server.sock'), '');
        await nodeFs.writeFile(join(dataDir, 'server.lock'), `${process.pid}\n`);
        expect(await serverPid(fs, dataDir, { platform })).to.equal(null);
        const results = await Promise.allSettled([0, 1].map(() => lockDataDir(fs, dataDir, { platform, waitMs: 0 })));
        const won = results.filter((r) => r.status === 'fulfilled');
        expect(won, 'exactly one starter holds the directory').to.have.length(1);
        expect(results.find((r) => r.status === 'rejected')?.reason).to.be.instanceOf(DataDirInUse);
        await (won[0] as PromiseFulfilledResult<{ release(): Promise<void> }>).value.release();
      });
    });
  });

  describe('real servers (child processes)', function () {
    this.timeout(180_000);

    before(async function () {
      this.timeout(120_000);
      await ensureBuilt();
    });

    afterEach(async () => {
      await killAllChildren();
    });

    it(`survives ${RESTART_CYCLES} cycles of SIGKILL and an immediate restart: every start succeeds and serves`, async function () {
      this.timeout(60_000 + RESTART_CYCLES * 2_000);
      const dataDir = await newDataDir();
      let child = await spawnServe(dataDir);
      const key = child.adminKey as string;
      for (let cycle = 0; cycle < RESTART_CYCLES; cycle++) {
        const res = await api(`${child.url}/api/v1/knowledge`, { key });
        expect(res.status, `cycle ${cycle}: the server answers`).to.equal(200);
        child.proc.kill('SIGKILL'); // no wait for the exit, no sleep: the next start races the kernel
        child = await spawnServe(dataDir).catch((err: unknown) => {
          throw new Error(`cycle ${cycle}: the restart was refused: ${String(err)}`);
        });
      }
      expect((await api(`${child.url}/api/v1/knowledge`, { key })).status).to.equal(200);
    });

    it('starts while the killed server is a zombie that its parent never reaps', async () => {
      const dataDir = await newDataDir();
      // bash starts the server in the background and becomes `sleep`, which never waits for it.
      const parent = spawn('bash', ['-c', '"$0" "$@" & echo "server-pid $!"; exec sleep 600', process.execPath, CLI, 'serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', dataDir], {
        cwd: ROOT,
        env: { ...process.env, LOG_LEVEL: 'warn', KNOWLEDGE_DATA_DIR: '', PORT: '', HOST: '' },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      others.push(parent);
      let out = '';
      parent.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
      const deadline = Date.now() + 15_000;
      while (!LISTENING.test(out) && Date.now() < deadline) await sleep(20);
      const pid = Number(/server-pid (\d+)/.exec(out)?.[1]);
      expect(LISTENING.test(out), out).to.equal(true);
      expect(await serverPid(fs, dataDir)).to.equal(pid);

      process.kill(pid, 'SIGKILL');
      while ((await processState(pid)) !== 'Z' && Date.now() < deadline) await sleep(10);
      expect(await processState(pid), 'the killed server is a zombie').to.equal('Z');
      // The leader shows Z as soon as it has exited; node's other threads, which share its open
      // files, may take a moment more, and the socket closes with the last of them.
      const gone = Date.now() + 1_000;
      while ((await serverPid(fs, dataDir)) !== null && Date.now() < gone) await sleep(10);
      expect(await serverPid(fs, dataDir), 'a zombie serves nothing').to.equal(null);

      const next = await spawnServe(dataDir);
      expect(await processState(pid), 'still a zombie while the new server starts').to.equal('Z');
      expect((await api(`${next.url}/api/v1/knowledge`, { key: ADMIN_KEY.exec(out)?.[1] as string })).status).to.equal(200);
      expect(await serverPid(fs, dataDir)).to.equal(next.pid);
      parent.kill('SIGKILL'); // its orphaned zombie goes to init, which reaps it
    });

    it('starts when server.lock names a live unrelated process and nothing holds the directory', async () => {
      const dataDir = await newDataDir();
      const first = await spawnServe(dataDir);
      await first.kill('SIGTERM');
      for (const pid of [process.pid, unrelatedProcess().pid as number]) {
        await nodeFs.writeFile(join(dataDir, 'server.lock'), `${pid}\n`);
        const next = await spawnServe(dataDir);
        expect((await api(`${next.url}/api/v1/knowledge`, { key: first.adminKey as string })).status, `server.lock naming ${pid}`).to.equal(200);
        expect((await nodeFs.readFile(join(dataDir, 'server.lock'), 'utf8')).trim()).to.equal(String(next.pid));
        await next.kill('SIGTERM');
      }
    });
  });
});

const ADMIN_KEY = /^Admin API key for organization "default": (ks_\S+)$/m;

/** The state letter of a process in /proc (R, S, Z...), or null when it is gone. */
async function processState(pid: number): Promise<string | null> {
  const status = await nodeFs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
  return /^State:\s+(\S)/m.exec(status)?.[1] ?? null;
}
