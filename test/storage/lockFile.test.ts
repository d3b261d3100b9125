import { expect } from 'chai';
import type { Volume } from 'memfs';
import type { FsPromises } from '../../src/storage/fs.js';
import { LockTimeout } from '../../src/storage/errors.js';
import { LockFile, withLock } from '../../src/storage/lockFile.js';
import { memoryFs } from '../support/memfs.js';
import { rejection } from '../support/records.js';

/** O_EXCL lock files, C git style (design.md, storage rule 2). */

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
