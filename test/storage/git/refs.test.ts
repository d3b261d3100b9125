import { expect } from 'chai';
import type { Volume } from 'memfs';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { LockTimeout, RefConflict } from '../../../src/storage/errors.js';
import { compareAndSwapRef, MAIN_REF, readRef, removeStagedRefUpdates, stageRefUpdate } from '../../../src/storage/git/refs.js';
import { memoryFs } from '../../support/memfs.js';
import { rejection } from '../../support/records.js';

/** Reading and compare-and-swapping `refs/heads/main` under its O_EXCL lock file. */

const GITDIR = '/repo.git';
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);


describe('storage/refs', () => {
  let vol: Volume;
  let fs: FsPromises;
  const loose = (): string => vol.readFileSync(`${GITDIR}/${MAIN_REF}`, 'utf8') as string;

  beforeEach(() => {
    ({ vol, fs } = memoryFs());
    vol.mkdirSync(`${GITDIR}/refs/heads`, { recursive: true });
  });

  describe('readRef', () => {
    it('is null when there is neither a loose ref nor packed-refs', async () => {
      expect(await readRef(fs, GITDIR)).to.equal(null);
    });

    it('reads a loose ref, trimming the newline', async () => {
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}`, `${A}\n`);
      expect(await readRef(fs, GITDIR)).to.equal(A);
    });

    it('falls back to packed-refs (after git gc / pack-refs)', async () => {
      vol.writeFileSync(
        `${GITDIR}/packed-refs`,
        `# pack-refs with: peeled fully-peeled sorted \n${C} refs/heads/feature\n${B} refs/heads/main\n${A} refs/tags/v1\n^${C}\n`,
      );
      expect(await readRef(fs, GITDIR)).to.equal(B);
      expect(await readRef(fs, GITDIR, 'refs/heads/feature')).to.equal(C);
      expect(await readRef(fs, GITDIR, 'refs/heads/other')).to.equal(null);
    });

    it('prefers the loose ref over packed-refs', async () => {
      vol.writeFileSync(`${GITDIR}/packed-refs`, `${B} refs/heads/main\n`);
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}`, `${A}\n`);
      expect(await readRef(fs, GITDIR)).to.equal(A);
    });

    it('does not take a ref whose name merely starts the same from packed-refs', async () => {
      vol.writeFileSync(`${GITDIR}/packed-refs`, `${B} refs/heads/main-old\n${C} refs/heads/mainline\n`);
      expect(await readRef(fs, GITDIR)).to.equal(null);
    });

    it('throws on a loose ref that holds no object id', async () => {
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}`, 'ref: refs/heads/other\n');
      const err = await rejection(readRef(fs, GITDIR));
      expect(String(err)).to.match(/not an object id/);
    });
  });

  describe('compareAndSwapRef', () => {
    it('creates the ref when null is expected and there is none', async () => {
      await compareAndSwapRef({ fs, gitdir: GITDIR, expected: null, next: A });
      expect(loose()).to.equal(`${A}\n`);
      expect(vol.existsSync(`${GITDIR}/${MAIN_REF}.lock`)).to.equal(false);
    });

    it('moves the ref when it holds the expected value', async () => {
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}`, `${A}\n`);
      await compareAndSwapRef({ fs, gitdir: GITDIR, expected: A, next: B });
      expect(loose()).to.equal(`${B}\n`);
      expect(await readRef(fs, GITDIR)).to.equal(B);
    });

    it('refuses a wrong expected value with RefConflict and leaves the ref unchanged', async () => {
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}`, `${A}\n`);
      const err = await rejection(compareAndSwapRef({ fs, gitdir: GITDIR, expected: C, next: B }));
      expect(err).to.be.instanceOf(RefConflict);
      expect((err as RefConflict).data).to.deep.equal({ ref: MAIN_REF, expected: C, actual: A });
      expect(loose()).to.equal(`${A}\n`);
      expect(vol.existsSync(`${GITDIR}/${MAIN_REF}.lock`)).to.equal(false);
    });

    it('refuses to create when null is expected but the ref exists', async () => {
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}`, `${A}\n`);
      const err = await rejection(compareAndSwapRef({ fs, gitdir: GITDIR, expected: null, next: B }));
      expect(err).to.be.instanceOf(RefConflict);
      expect(loose()).to.equal(`${A}\n`);
    });

    it('refuses to move a ref that does not exist', async () => {
      const err = await rejection(compareAndSwapRef({ fs, gitdir: GITDIR, expected: A, next: B }));
      expect(err).to.be.instanceOf(RefConflict);
      expect(vol.existsSync(`${GITDIR}/${MAIN_REF}`)).to.equal(false);
    });

    it('compares against a packed ref and writes a loose one', async () => {
      vol.writeFileSync(`${GITDIR}/packed-refs`, `${A} refs/heads/main\n`);
      const err = await rejection(compareAndSwapRef({ fs, gitdir: GITDIR, expected: null, next: B }));
      expect(err).to.be.instanceOf(RefConflict);
      await compareAndSwapRef({ fs, gitdir: GITDIR, expected: A, next: B });
      expect(loose()).to.equal(`${B}\n`);
      expect(await readRef(fs, GITDIR)).to.equal(B);
    });

    it('waits for the lock held by another writer and times out without touching the ref', async () => {
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}`, `${A}\n`);
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}.lock`, `${C}\n`);
      const err = await rejection(compareAndSwapRef({ fs, gitdir: GITDIR, expected: A, next: B, lock: { timeoutMs: 200 } }));
      expect(err).to.be.instanceOf(LockTimeout);
      expect(loose()).to.equal(`${A}\n`);
      // The other writer's lock is theirs: left in place.
      expect(vol.readFileSync(`${GITDIR}/${MAIN_REF}.lock`, 'utf8')).to.equal(`${C}\n`);
    });

    it('lets exactly one of two racing writers with the same expected value win', async () => {
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}`, `${A}\n`);
      const results = await Promise.allSettled([
        compareAndSwapRef({ fs, gitdir: GITDIR, expected: A, next: B }),
        compareAndSwapRef({ fs, gitdir: GITDIR, expected: A, next: C }),
      ]);
      const won = results.filter((r) => r.status === 'fulfilled');
      const lost = results.filter((r) => r.status === 'rejected');
      expect(won).to.have.length(1);
      expect(lost).to.have.length(1);
      expect((lost[0] as PromiseRejectedResult).reason).to.be.instanceOf(RefConflict);
      expect(loose()).to.equal(results[0]?.status === 'fulfilled' ? `${B}\n` : `${C}\n`);
    });
  });

  describe('stageRefUpdate (the pipeline\'s two halves)', () => {
    const staged = (): string[] => (vol.readdirSync(`${GITDIR}/refs/heads`) as string[]).filter((n) => n.startsWith('main.next-')).sort();

    it('stages the value while another writer holds the lock, then swaps once it is free', async () => {
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}`, `${A}\n`);
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}.lock`, `${B}\n`);
      const update = await stageRefUpdate({ fs, gitdir: GITDIR, expected: B, next: C });
      expect(staged()).to.have.length(1);
      // The batch before moves the ref and lets its lock go.
      vol.renameSync(`${GITDIR}/${MAIN_REF}.lock`, `${GITDIR}/${MAIN_REF}`);
      await update.swap();
      expect(loose()).to.equal(`${C}\n`);
      expect(staged()).to.deep.equal([]);
      expect(vol.existsSync(`${GITDIR}/${MAIN_REF}.lock`)).to.equal(false);
    });

    it('refuses a ref that moved meanwhile (RefConflict), leaving neither the lock nor the staged value', async () => {
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}`, `${A}\n`);
      const update = await stageRefUpdate({ fs, gitdir: GITDIR, expected: B, next: C });
      expect(await rejection(update.swap())).to.be.instanceOf(RefConflict);
      expect(loose()).to.equal(`${A}\n`);
      expect(staged()).to.deep.equal([]);
      expect(vol.existsSync(`${GITDIR}/${MAIN_REF}.lock`)).to.equal(false);
    });

    it('removes, when a repository is opened, the staged values a crash left (only stale ones)', async () => {
      vol.writeFileSync(`${GITDIR}/${MAIN_REF}`, `${A}\n`);
      vol.writeFileSync(`${GITDIR}/refs/heads/main.next-0123456789ab.lock`, `${B}\n`);
      await stageRefUpdate({ fs, gitdir: GITDIR, expected: A, next: C });
      const old = new Date(Date.now() - 60_000);
      vol.utimesSync(`${GITDIR}/refs/heads/main.next-0123456789ab.lock`, old, old);
      await removeStagedRefUpdates(fs, GITDIR);
      // The crash's is gone; the live one (a writer of a running server) stays.
      expect(staged()).to.have.length(1);
      expect(staged()).to.not.include('main.next-0123456789ab.lock');
      expect(loose()).to.equal(`${A}\n`);
    });
  });
});
