import { randomBytes } from 'node:crypto';
import { promises as nodeFs } from 'node:fs';
import { deflateSync } from 'node:zlib';
import { expect } from 'chai';
import { errnoCode } from '../../../src/common/errors.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { writeLooseBlob } from '../../../src/storage/git/looseObject.js';
import { blobObject } from '../../../src/storage/git/objectFormat.js';
import { ObjectDatabase, objectCaches } from '../../../src/storage/git/objectDatabase.js';
import { git } from '../../support/git.js';
import { catAll, entryTypes, fastImport, gitWithInput, noise, packsIn, type Expected } from '../../support/packRepo.js';
import { tmpDir } from '../../support/tmp.js';

const fs = nodeFs as unknown as FsPromises;

/** Reads every expected object through a reader; returns the first difference or error, or undefined. */
async function readAll(db: ObjectDatabase, expected: Expected): Promise<string | undefined> {
  for (const [oid, want] of expected) {
    const got = await db.read(oid);
    if (got.type !== want.type || !got.body.equals(want.body)) return `${oid}: ${got.type} of ${got.body.byteLength} bytes, C git says ${want.type} of ${want.body.byteLength}`;
  }
  return undefined;
}

/**
 * The pack reader against C git: a repository with an OFS_DELTA pack (`git pack-objects
 * --delta-base-offset`, depth 50), a REF_DELTA pack (without it) and loose objects; every object
 * read equals `git cat-file --batch` byte for byte.
 */
describe('storage/git: our pack reader, judged by C git', function () {
  this.timeout(120_000);
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let gitdir: string;
  let expected: Expected;

  before(async () => {
    tmp = await tmpDir('ks-packreader');
    gitdir = `${tmp.dir}/repo.git`;
    await fastImport(gitdir, 300);
    const [imported] = await packsIn(gitdir);
    const packDir = `${gitdir}/objects/pack`;
    const older = await git(['rev-list', '--objects', 'main~100'], { gitdir });
    const newer = await git(['rev-list', '--objects', 'main~100..main'], { gitdir });
    await gitWithInput(['pack-objects', '-q', '--window=50', '--depth=50', '--delta-base-offset', `${packDir}/pack`], older, gitdir);
    await gitWithInput(['pack-objects', '-q', '--window=50', '--depth=50', `${packDir}/pack`], newer, gitdir);
    await nodeFs.unlink(imported as string);
    await nodeFs.unlink((imported as string).replace(/\.pack$/, '.idx'));
    // Loose objects beside the packs: a small blob and a large one (inflated off the event loop).
    const entries: string[] = [];
    for (const [k, bytes] of [Buffer.from('a loose blob\n'), noise('loose', 2_000_000)].entries()) {
      const { oid } = blobObject(bytes);
      await writeLooseBlob({ fs, gitdir, oid, bytes });
      entries.push(`100644 blob ${oid}\tloose-${k}`);
    }
    // Named by a branch, as everything the store keeps is (a repack drops what nothing names).
    const tree = (await gitWithInput(['mktree'], `${entries.join('\n')}\n`, gitdir)).toString().trim();
    await git(['update-ref', 'refs/heads/loose', (await git(['commit-tree', tree, '-m', 'loose'], { gitdir })).trim()], { gitdir });
    await git(['fsck', '--strict', '--no-dangling'], { gitdir });
    expected = await catAll(gitdir);
  });
  after(() => tmp.cleanup());

  it('has what it is meant to test: OFS_DELTA and REF_DELTA entries, long chains, loose objects', async () => {
    const types = await Promise.all((await packsIn(gitdir)).map(entryTypes));
    expect(types.some((t) => (t.get(6) ?? 0) > 50), 'a pack with OFS_DELTA entries').to.equal(true);
    expect(types.some((t) => (t.get(7) ?? 0) > 50), 'a pack with REF_DELTA entries').to.equal(true);
    const verify = await git(['verify-pack', '-v', ...(await packsIn(gitdir)).map((p) => p.replace(/\.pack$/, '.idx'))], { gitdir });
    expect(Math.max(...[...verify.matchAll(/chain length = (\d+)/g)].map((m) => Number(m[1]))), 'longest delta chain').to.be.at.least(10);
    expect(expected.size).to.be.greaterThan(700);
  });

  it('reads every object byte for byte as C git does, with a cold and with a warm cache', async () => {
    const db = new ObjectDatabase(fs, gitdir);
    expect(await readAll(db, expected)).to.equal(undefined);
    expect(await readAll(db, expected)).to.equal(undefined);
    // Concurrent reads of the same objects share windows and bases.
    const ids = [...expected.keys()];
    const shared = new ObjectDatabase(fs, gitdir);
    const bodies = await Promise.all(ids.map((oid) => shared.read(oid)));
    shared.close();
    bodies.forEach((b, i) => expect(b.body.equals((expected.get(ids[i] as string) as { body: Buffer }).body)).to.equal(true));
    db.close();
  });

  it('reads each repository\'s own bytes through caches shared with another (a server\'s), within their bounds', async () => {
    // The same objects packed otherwise (other offsets, other deltas): a window or base taken from the wrong pack
    // would give bytes that fail their id's check.
    const other = `${tmp.dir}/repacked.git`;
    await nodeFs.cp(gitdir, other, { recursive: true });
    await git(['repack', '-a', '-d', '-f', '-q', '--window=10', '--depth=7'], { gitdir: other });
    const bound = 256 * 1024;
    const caches = objectCaches({ windowBytes: bound, baseBytes: bound });
    const dbs = [new ObjectDatabase(fs, gitdir, caches), new ObjectDatabase(fs, other, caches)];
    const ids = [...expected.keys()];
    for (let round = 0; round < 2; round++) {
      // In turns and at once, as requests to two organizations come.
      for (const [i, oid] of ids.entries()) {
        const got = await (dbs[i % 2] as ObjectDatabase).read(oid);
        expect(got.body.equals((expected.get(oid) as { body: Buffer }).body), oid).to.equal(true);
      }
      const bodies = await Promise.all(ids.flatMap((oid) => dbs.map((db) => db.read(oid))));
      bodies.forEach((b, i) => expect(b.body.equals((expected.get(ids[Math.floor(i / 2)] as string) as { body: Buffer }).body)).to.equal(true));
    }
    expect(caches.windows.bytes).to.be.within(1, bound);
    expect(caches.bases.weight).to.be.within(1, bound);
    // A repository closed takes what it kept with it: every entry is keyed by one of its packs.
    dbs.forEach((db) => db.close());
    expect(caches.windows.bytes).to.equal(0);
    expect(caches.bases.weight).to.equal(0);
  });

  it('reports a missing object as CORRUPT_STORE, after looking at the packs again', async () => {
    const db = new ObjectDatabase(fs, gitdir);
    const err = await db.read('0123456789abcdef0123456789abcdef01234567').catch((e: unknown) => e);
    expect((err as { code?: string }).code).to.equal('CORRUPT_STORE');
    expect(String(err)).to.match(/missing/);
    db.close();
  });

  it('ends its listing when a pack index has lost its pack (no endless rescans), and reads what the other packs hold', async () => {
    const copy = `${tmp.dir}/lost-pack.git`;
    await nodeFs.cp(gitdir, copy, { recursive: true });
    const [lost, kept] = await packsIn(copy);
    await nodeFs.unlink(lost as string);
    const db = new ObjectDatabase(fs, copy);
    const inKept = (await gitWithInput(['show-index'], await nodeFs.readFile((kept as string).replace(/\.pack$/, '.idx')), copy)).toString().trim().split('\n');
    const oid = (inKept[0] as string).split(' ')[1] as string;
    expect((await db.read(oid)).body.equals((expected.get(oid) as { body: Buffer }).body)).to.equal(true);
    expect(await db.read('00000000000000000000000000000000000000ff').catch((e: unknown) => (e as { code?: string }).code)).to.equal('CORRUPT_STORE');
    expect(await db.read('not an id').catch((e: unknown) => (e as { code?: string }).code)).to.equal('CORRUPT_STORE');
    db.close();
  });

  it('never fails a read while C git repacks beside it (loose objects packed, packs replaced)', async () => {
    const live = new ObjectDatabase(fs, gitdir);
    const want: Expected = new Map(expected);
    for (let round = 0; round < 6; round++) {
      const entries: string[] = [];
      for (let k = 0; k < 30; k++) {
        const bytes = Buffer.from(`round ${round} blob ${k}\n${'x'.repeat(k * 10)}`);
        const { oid } = blobObject(bytes);
        await writeLooseBlob({ fs, gitdir, oid, bytes });
        want.set(oid, { type: 'blob', body: bytes });
        entries.push(`100644 blob ${oid}\tb${k}`);
      }
      const tree = (await gitWithInput(['mktree'], `${entries.join('\n')}\n`, gitdir)).toString().trim();
      const commit = (await git(['commit-tree', tree, '-m', `round ${round}`], { gitdir })).trim();
      await git(['update-ref', `refs/heads/round-${round}`, commit], { gitdir });
      let repacking = true;
      const repack = (async () => {
        try {
          await git(['repack', '-d', '-q'], { gitdir });
          await git(['repack', '-a', '-d', '-f', '-q', '--window=20', '--depth=30'], { gitdir });
          await git(['repack', '-d', '-q', '--geometric=2'], { gitdir });
        } finally {
          repacking = false;
        }
      })();
      // As the repack schedule does after each repack: the packs listed again, the removed ones dropped (closed) while reads go on.
      const rescans = (async () => {
        while (repacking) {
          await live.rescan();
          await new Promise((resolve) => setTimeout(resolve, 2));
        }
      })();
      let passes = 0;
      while (repacking || passes < 2) {
        // A long-lived reader, and a fresh one that lists the packs while they are being replaced.
        expect(await readAll(live, want)).to.equal(undefined);
        const fresh = new ObjectDatabase(fs, gitdir);
        expect(await readAll(fresh, want)).to.equal(undefined);
        fresh.close();
        passes++;
      }
      await repack;
      await rescans;
    }
    live.close();
  });

  it('answers CORRUPT_STORE for a damaged pack or loose object, never wrong bytes', async () => {
    const copy = `${tmp.dir}/damaged.git`;
    await nodeFs.cp(gitdir, copy, { recursive: true });
    await git(['repack', '-a', '-d', '-q'], { gitdir: copy });
    const [pack] = await packsIn(copy);
    const original = await nodeFs.readFile(pack as string);
    const all = await catAll(copy);
    let corrupt = 0;
    // Flip one byte at a time, at spread-out places of the pack's entries.
    for (let k = 1; k <= 12; k++) {
      const at = 12 + Math.floor(((original.byteLength - 32) * k) / 13);
      const damaged = Buffer.from(original);
      damaged[at] = (damaged[at] as number) ^ 0x5a;
      await nodeFs.writeFile(pack as string, damaged);
      const db = new ObjectDatabase(fs, copy);
      for (const [oid, want] of all) {
        try {
          const got = await db.read(oid);
          expect(got.body.equals(want.body), `${oid} read after a flip at ${at}`).to.equal(true);
        } catch (err) {
          expect((err as { code?: string }).code, String(err)).to.equal('CORRUPT_STORE');
          corrupt++;
        }
      }
      db.close();
    }
    expect(corrupt, 'objects reported damaged').to.be.at.least(12);
    await nodeFs.writeFile(pack as string, original);

    const { oid } = blobObject(Buffer.from('loose and damaged\n'));
    await writeLooseBlob({ fs, gitdir: copy, oid, bytes: Buffer.from('loose and damaged\n') });
    const path = `${copy}/objects/${oid.slice(0, 2)}/${oid.slice(2)}`;
    const loose = await nodeFs.readFile(path);
    loose[loose.byteLength - 3] = (loose[loose.byteLength - 3] as number) ^ 0xff;
    await nodeFs.chmod(path, 0o644);
    await nodeFs.writeFile(path, loose);
    const db = new ObjectDatabase(fs, copy);
    const err = await db.read(oid).catch((e: unknown) => e);
    db.close();
    expect((err as { code?: string }).code, String(err)).to.equal('CORRUPT_STORE');
    expect(errnoCode(err)).to.equal('CORRUPT_STORE');
    expect(String(err)).to.match(/cannot inflate|header/);
  });

  it('checks a large object (hashed in slices) as it checks a small one: its bytes, or CORRUPT_STORE', async () => {
    const copy = `${tmp.dir}/large.git`;
    await git(['init', '--bare', '-q', copy]);
    const big = Buffer.alloc(3 * 1024 * 1024 + 17, 'a large file item\n');
    const { oid } = blobObject(big);
    await writeLooseBlob({ fs, gitdir: copy, oid, bytes: big });
    const db = new ObjectDatabase(fs, copy);
    expect((await db.read(oid)).body.equals(big)).to.equal(true);
    // Other bytes of the same size at its name, whole and well-formed: only the id tells them apart, in the last slice.
    const other = Buffer.from(big);
    other[other.byteLength - 2] = 0x21;
    const { oid: otherId } = blobObject(other);
    await writeLooseBlob({ fs, gitdir: copy, oid: otherId, bytes: other });
    const path = (id: string): string => `${copy}/objects/${id.slice(0, 2)}/${id.slice(2)}`;
    await nodeFs.chmod(path(oid), 0o644);
    await nodeFs.copyFile(path(otherId), path(oid));
    const err = await db.read(oid).catch((e: unknown) => e);
    db.close();
    expect((err as { code?: string }).code, String(err)).to.equal('CORRUPT_STORE');
    expect(String(err)).to.include(`hash to ${otherId}`);
  });

  it('reads a large loose object that barely compresses whole, and refuses one whose header understates its size', async () => {
    const copy = `${tmp.dir}/loose-large.git`;
    await git(['init', '--bare', '-q', copy]);
    const noisy = randomBytes(2 * 1024 * 1024 + 3);
    const { oid } = blobObject(noisy);
    await writeLooseBlob({ fs, gitdir: copy, oid, bytes: noisy });
    const db = new ObjectDatabase(fs, copy);
    expect((await db.read(oid)).body.equals(noisy)).to.equal(true);
    // A header that says 10 bytes in front of 200 KB: inflating stops at what the header allows.
    const liar = Buffer.concat([Buffer.from('blob 10\0', 'latin1'), randomBytes(200 * 1024)]);
    const liarId = blobObject(Buffer.from('ten bytes!')).oid;
    const path = `${copy}/objects/${liarId.slice(0, 2)}/${liarId.slice(2)}`;
    await nodeFs.mkdir(path.slice(0, path.lastIndexOf('/')), { recursive: true });
    await nodeFs.writeFile(path, deflateSync(liar));
    const err = await db.read(liarId).catch((e: unknown) => e);
    db.close();
    expect((err as { code?: string }).code, String(err)).to.equal('CORRUPT_STORE');
    expect(String(err)).to.match(/cannot inflate/);
  });
});
