import { expect } from 'chai';
import type { Volume } from 'memfs';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { LockTimeout } from '../../../src/storage/errors.js';
import { LockFile, withLock } from '../../../src/storage/fs/lockFile.js';
import { memoryFs } from '../../support/memfs.js';
import { rejection } from '../../support/records.js';

/** O_EXCL lock files, C git style: the branch is compare-and-swapped under one. */

const TARGET = '/repo/refs/heads/main';
const LOCK = `${TARGET}.lock`;


describe('storage/lockFile', () => {
  let vol: Volume;
  let fs: FsPromises;

  beforeEach(() => {
    ({ vol, fs } = memoryFs());
    vol.mkdirSync('/repo/refs/heads', { recursive: true });
  });

  it('creates <target>.lock while held and removes it on release', async () => {
    const lock = await LockFile.acquire(fs, TARGET);
    expect(vol.existsSync(LOCK)).to.equal(true);
    expect(lock.path).to.equal(LOCK);
    await lock.release();
    expect(vol.existsSync(LOCK)).to.equal(false);
    expect(vol.existsSync(TARGET)).to.equal(false);
  });

  it('commit renames the lock over the target with the new content', async () => {
    vol.writeFileSync(TARGET, 'old\n');
    const lock = await LockFile.acquire(fs, TARGET);
    await lock.commit('new\n');
    expect(vol.readFileSync(TARGET, 'utf8')).to.equal('new\n');
    expect(vol.existsSync(LOCK)).to.equal(false);
    await lock.release(); // a no-op once committed
    expect(vol.readFileSync(TARGET, 'utf8')).to.equal('new\n');
  });

  it('makes a second acquire wait while the lock is held, then time out with LockTimeout', async () => {
    const held = await LockFile.acquire(fs, TARGET);
    const started = Date.now();
    const err = await rejection(LockFile.acquire(fs, TARGET, { timeoutMs: 300 }));
    const waited = Date.now() - started;
    expect(err).to.be.instanceOf(LockTimeout);
    expect((err as LockTimeout).code).to.equal('LOCK_TIMEOUT');
    expect((err as LockTimeout).data.lockPath).to.equal(LOCK);
    expect(waited).to.be.at.least(290);
    expect(waited).to.be.below(3000);
    // The holder still holds it: the timed-out waiter did not remove its lock.
    expect(vol.existsSync(LOCK)).to.equal(true);
    await held.commit('mine\n');
    expect(vol.readFileSync(TARGET, 'utf8')).to.equal('mine\n');
  });

  it('gives the lock to a waiter as soon as the holder releases it', async () => {
    const held = await LockFile.acquire(fs, TARGET);
    let acquired = false;
    const waiting = LockFile.acquire(fs, TARGET, { timeoutMs: 5000 }).then((lock) => {
      acquired = true;
      return lock;
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(acquired).to.equal(false);
    await held.release();
    const second = await waiting;
    expect(acquired).to.equal(true);
    await second.commit('second\n');
    expect(vol.readFileSync(TARGET, 'utf8')).to.equal('second\n');
  });

  it('breaks a lock older than staleMs (left by a crash)', async () => {
    vol.writeFileSync(LOCK, '');
    const old = Date.now() / 1000 - 120;
    vol.utimesSync(LOCK, old, old);
    const started = Date.now();
    const lock = await LockFile.acquire(fs, TARGET, { staleMs: 60_000, timeoutMs: 2000 });
    expect(Date.now() - started).to.be.below(1000);
    await lock.commit('after crash\n');
    expect(vol.readFileSync(TARGET, 'utf8')).to.equal('after crash\n');
  });

  it('lets only one of two waiters that judged the same lock stale acquire it', async () => {
    // Both waiters stat the crashed lock and find it stale; the first breaks it and takes a fresh
    // lock; only then does the second act on what it judged. It must not take the fresh lock away.
    vol.writeFileSync(LOCK, '');
    const old = Date.now() / 1000 - 120;
    vol.utimesSync(LOCK, old, old);
    let arrived = 0;
    let bothStatted!: () => void;
    const both = new Promise<void>((resolve) => (bothStatted = resolve));
    let letSecondGo!: () => void;
    const secondMayGo = new Promise<void>((resolve) => (letSecondGo = resolve));
    const racing = Object.create(fs) as FsPromises;
    racing.stat = async (path: string) => {
      const stats = await fs.stat(path);
      if (path !== LOCK || arrived >= 2) return stats;
      const me = ++arrived;
      if (me === 2) bothStatted();
      await both;
      if (me === 2) await secondMayGo;
      return stats;
    };
    const options = { staleMs: 60_000, timeoutMs: 400 };
    const outcomes: Array<'acquired' | 'timed out'> = [];
    const attempt = (): Promise<LockFile | undefined> =>
      LockFile.acquire(racing, TARGET, options).then(
        (lock) => (outcomes.push('acquired'), lock),
        (err: unknown) => {
          expect(err).to.be.instanceOf(LockTimeout);
          outcomes.push('timed out');
          return undefined;
        },
      );
    const waiters = [attempt(), attempt()];
    const winner = (await Promise.race(waiters)) as LockFile;
    expect(outcomes).to.deep.equal(['acquired']);
    const winnersLock = vol.statSync(LOCK).ino;
    letSecondGo();
    const [a, b] = await Promise.all(waiters);
    expect(outcomes, 'exactly one waiter may own the lock').to.deep.equal(['acquired', 'timed out']);
    expect([a, b].filter(Boolean)).to.have.length(1);
    expect(vol.statSync(LOCK).ino, "the winner's lock file is still in place").to.equal(Number(winnersLock));
    expect(vol.readdirSync('/repo/refs/heads'), 'nothing left aside').to.deep.equal(['main.lock']);
    await winner.commit('winner\n');
    expect(vol.readFileSync(TARGET, 'utf8')).to.equal('winner\n');
    expect(vol.existsSync(LOCK)).to.equal(false);
  });

  it('does not break a lock younger than staleMs', async () => {
    vol.writeFileSync(LOCK, '');
    const recent = Date.now() / 1000 - 5;
    vol.utimesSync(LOCK, recent, recent);
    const err = await rejection(LockFile.acquire(fs, TARGET, { staleMs: 60_000, timeoutMs: 200 }));
    expect(err).to.be.instanceOf(LockTimeout);
    expect(vol.existsSync(LOCK)).to.equal(true);
  });

  it('withLock releases the lock when the body throws, and passes the result through', async () => {
    const err = await rejection(
      withLock(fs, TARGET, async () => {
        throw new Error('body failed');
      }),
    );
    expect(String(err)).to.include('body failed');
    expect(vol.existsSync(LOCK)).to.equal(false);
    expect(await withLock(fs, TARGET, async () => 42)).to.equal(42);
    expect(vol.existsSync(LOCK)).to.equal(false);
  });

  it('serializes many concurrent holders: each read-modify-write sees the previous one', async () => {
    vol.writeFileSync(TARGET, '0');
    await Promise.all(
      Array.from({ length: 20 }, () =>
        withLock(
          fs,
          TARGET,
          async (lock) => {
            const n = Number(await fs.readFile(TARGET, 'utf8'));
            await new Promise((r) => setTimeout(r, 1));
            await lock.commit(String(n + 1));
          },
          { timeoutMs: 10_000 },
        ),
      ),
    );
    expect(vol.readFileSync(TARGET, 'utf8')).to.equal('20');
  });

  it('refuses to commit a released lock', async () => {
    const lock = await LockFile.acquire(fs, TARGET);
    await lock.release();
    const err = await rejection(lock.commit('late\n'));
    expect(String(err)).to.match(/already released/);
    expect(vol.existsSync(TARGET)).to.equal(false);
  });
});
