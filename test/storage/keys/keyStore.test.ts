import { promises as nodeFs } from 'node:fs';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import { CorruptStore } from '../../../src/storage/errors.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { watchDirectory } from '../../../src/storage/fs/fileWatch.js';
import { KeyStore, type KeyRecord } from '../../../src/storage/keys/keyStore.js';
import { FaultyFs, type CallRecord } from '../../support/faultyFs.js';
import { sleep } from '../../support/sleep.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * The key file shared by the server and the CLI (outside git;
 * a key created while the server runs works within a second, and
 * concurrent use never corrupts state). Real disk: inodes, renames, O_EXCL.
 */

const fs = nodeFs as unknown as FsPromises;

let n = 0;
function key(orgId = 'acme', extra: Partial<KeyRecord> = {}): KeyRecord {
  n++;
  const hex = n.toString(16).padStart(16, '0');
  return {
    id: `key_${hex}`,
    orgId,
    name: `key ${n}`,
    role: 'writer',
    hash: hex.repeat(4),
    createdAt: new Date().toISOString(),
    revokedAt: null,
    lastUsedAt: null,
    ...extra,
  };
}

describe('storage/keyStore (real disk, two instances on one data dir)', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let a: KeyStore;
  let b: KeyStore;

  beforeEach(async () => {
    tmp = await tmpDir('ks-keystore');
    a = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
    b = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
  });

  afterEach(async () => {
    await tmp.cleanup();
  });

  it('starts empty without a key file', async () => {
    expect(await a.list()).to.deep.equal([]);
    expect(await a.findByHash('f'.repeat(64))).to.equal(undefined);
  });

  it('finds a key added by the other instance after a refresh', async () => {
    expect(await b.list()).to.deep.equal([]); // b has loaded (an empty file)
    const k = key();
    await a.add(k);
    expect(await b.get(k.id)).to.deep.equal(k);
    expect((await b.list('acme')).map((x) => x.id)).to.deep.equal([k.id]);
  });

  it('finds a new key by hash within the miss-refresh interval', async () => {
    await b.findByHash('0'.repeat(64)); // loaded and fresh
    const k = key();
    await a.add(k);
    let found: KeyRecord | undefined;
    const started = Date.now();
    while (!found && Date.now() - started < 1000) {
      found = await b.findByHash(k.hash);
      if (!found) await sleep(5);
    }
    expect(found?.id).to.equal(k.id);
    expect(Date.now() - started).to.be.below(1000);
  });

  it('sees a revocation made by the other instance within the refresh interval', async () => {
    const k = key();
    await a.add(k);
    expect((await b.findByHash(k.hash))?.revokedAt).to.equal(null);
    await a.update(k.id, (r) => {
      r.revokedAt = '2024-01-01T00:00:00.000Z';
    });
    let revokedAt: string | null | undefined = null;
    const started = Date.now();
    while (revokedAt === null && Date.now() - started < 1000) {
      revokedAt = (await b.findByHash(k.hash))?.revokedAt;
      if (revokedAt === null) await sleep(20);
    }
    expect(revokedAt).to.equal('2024-01-01T00:00:00.000Z');
  });

  it('loses nothing when 50 adds race from both instances', async () => {
    const records = Array.from({ length: 50 }, () => key());
    await Promise.all(records.map((r, i) => (i % 2 === 0 ? a : b).add(r)));
    const fromA = (await a.list()).map((r) => r.id).sort();
    const fromB = (await b.list()).map((r) => r.id).sort();
    const expected = records.map((r) => r.id).sort();
    expect(fromA).to.deep.equal(expected);
    expect(fromB).to.deep.equal(expected);
    const onDisk = JSON.parse(await nodeFs.readFile(`${tmp.dir}/keys.json`, 'utf8')) as { version: number; keys: KeyRecord[] };
    expect(onDisk.version).to.equal(1);
    expect(onDisk.keys.map((r) => r.id).sort()).to.deep.equal(expected);
    expect((await nodeFs.readdir(tmp.dir)).sort()).to.deep.equal(['keys.json']);
  });

  it('loses no add when another instance flushes key usage at the same time', async () => {
    const first = key();
    await a.add(first);
    b.noteUsed(first.id, new Date('2024-02-02T00:00:00Z'));
    const more = Array.from({ length: 10 }, () => key());
    await Promise.all([b.flushUsage(), ...more.map((r) => a.add(r))]);
    const stored = await a.list();
    expect(stored).to.have.length(11);
    const freshC = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
    expect((await freshC.get(first.id))?.lastUsedAt).to.equal('2024-02-02T00:00:00.000Z');
  });

  it('keeps per-organization lists apart', async () => {
    await a.add(key('acme'));
    await b.add(key('globex'));
    await a.add(key('acme'));
    expect((await b.list('acme')).map((k) => k.orgId)).to.deep.equal(['acme', 'acme']);
    expect((await a.list('globex')).map((k) => k.orgId)).to.deep.equal(['globex']);
    expect(await a.list('initech')).to.deep.equal([]);
  });

  it('update of an unknown id returns undefined and changes nothing', async () => {
    const k = key();
    await a.add(k);
    const before = await nodeFs.readFile(`${tmp.dir}/keys.json`, 'utf8');
    expect(await b.update('key_missing', () => expect.fail('must not be called'))).to.equal(undefined);
    expect(JSON.parse(await nodeFs.readFile(`${tmp.dir}/keys.json`, 'utf8'))).to.deep.equal(JSON.parse(before));
  });

  it('refuses a corrupt key file with CorruptStore instead of treating it as empty', async () => {
    await nodeFs.writeFile(`${tmp.dir}/keys.json`, '{"version":1,"keys":[');
    let error: unknown;
    await a.list().catch((e: unknown) => (error = e));
    expect(error).to.be.instanceOf(CorruptStore);
    error = undefined;
    await a.add(key()).catch((e: unknown) => (error = e));
    expect(error).to.be.instanceOf(CorruptStore);
    expect(await nodeFs.readFile(`${tmp.dir}/keys.json`, 'utf8')).to.equal('{"version":1,"keys":[');
  });
});

describe('storage/keyStore watching the data directory (real disk, real inotify)', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let stats: number;
  const counting = Object.create(fs) as FsPromises;
  counting.stat = (path: string) => {
    stats++;
    return fs.stat(path);
  };

  beforeEach(async () => {
    tmp = await tmpDir('ks-keys-watch');
    stats = 0;
  });
  afterEach(() => tmp.cleanup());

  it('stats keys.json only after a reported change, and sees a change made by another instance on the next lookup', async () => {
    const server = new KeyStore({ fs: counting, dataDir: tmp.dir, logger: silentLogger, watch: watchDirectory });
    const cli = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
    await server.startWatching();
    try {
      const k = key();
      await cli.add(k);
      expect((await server.findByHash(k.hash))?.id).to.equal(k.id);
      stats = 0;
      for (let i = 0; i < 200; i++) await server.findByHash(k.hash);
      expect(stats, 'stats across 200 lookups with nothing changed').to.equal(0);
      // The CLI revokes, then the very next lookup must see it: no sleep in between.
      for (let round = 0; round < 20; round++) {
        const next = key();
        await cli.add(next);
        expect((await server.findByHash(next.hash))?.id, `round ${round}: new key`).to.equal(next.id);
        await cli.update(next.id, (r) => {
          r.revokedAt = new Date().toISOString();
        });
        expect((await server.findByHash(next.hash))?.revokedAt, `round ${round}: revocation`).to.be.a('string');
      }
    } finally {
      server.stopWatch();
    }
  });

  it('does not read back what it wrote itself (a usage flush, a key made), but does read another writer\'s change', async () => {
    let reads = 0;
    const reading = Object.create(fs) as FsPromises;
    reading.readFile = ((path: string, encoding: 'utf8') => {
      if (path.endsWith('/keys.json')) reads++;
      return fs.readFile(path, encoding);
    }) as unknown as FsPromises['readFile'];
    const server = new KeyStore({ fs: reading, dataDir: tmp.dir, logger: silentLogger, watch: watchDirectory });
    const cli = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
    await server.startWatching();
    try {
      const k = key();
      await server.add(k);
      server.noteUsed(k.id, new Date());
      await server.flushUsage();
      reads = 0;
      expect((await server.findByHash(k.hash))?.lastUsedAt, 'its own flush, as written').to.be.a('string');
      await sleep(50); // the watch's reports of its own renames
      expect((await server.findByHash(k.hash))?.id).to.equal(k.id);
      expect(reads, 'reads of keys.json after its own writes').to.equal(0);
      await cli.update(k.id, (r) => {
        r.revokedAt = new Date().toISOString();
      });
      expect((await server.findByHash(k.hash))?.revokedAt, 'the other writer\'s revocation').to.be.a('string');
      expect(reads).to.equal(1);
      // Its next write reads the file under the lock (the one read a change needs), and nothing after.
      server.noteUsed(k.id, new Date(Date.now() + 1000));
      await server.flushUsage();
      await sleep(50);
      expect((await server.findByHash(k.hash))?.revokedAt, 'the revocation kept through its own write').to.be.a('string');
      expect(reads).to.equal(2);
    } finally {
      server.stopWatch();
    }
  });

  it('falls back to a stat per lookup when the watch fails', async () => {
    let fail: (err: unknown) => void = () => undefined;
    const store = new KeyStore({
      fs: counting,
      dataDir: tmp.dir,
      logger: silentLogger,
      watch: (_dir, _onChange, onError) => {
        fail = onError;
        return () => undefined;
      },
    });
    await store.startWatching();
    await store.findByHash('0'.repeat(64));
    fail(new Error('ENOSPC: inotify watches exhausted'));
    stats = 0;
    const k = key();
    await new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger }).add(k);
    // No change is reported any more, yet the lookup sees the new key: it stats.
    expect((await store.findByHash(k.hash))?.id).to.equal(k.id);
    expect(stats).to.be.greaterThan(0);
  });
});

describe('storage/keyStore on a failing disk (the directory fsync after the rename)', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let faulty: FaultyFs;
  const keysFile = (): string => `${tmp.dir}/keys.json`;

  beforeEach(async () => {
    tmp = await tmpDir('ks-keys-faulty');
    faulty = new FaultyFs(nodeFs, { record: true });
  });
  afterEach(() => tmp.cleanup());

  /** The number of the directory fsync that makes a key file change durable, counted from `faulty.reset()`. */
  async function dirSyncAfterRename(run: () => Promise<unknown>): Promise<number> {
    faulty.reset();
    await run();
    const rename = faulty.calls.find((c) => c.op === 'rename' && c.path.endsWith('keys.json.lock -> ' + keysFile()));
    const sync = faulty.calls.find((c) => c.n > (rename?.n ?? Infinity) && c.op === 'handle.sync' && c.path === tmp.dir);
    expect(sync, JSON.stringify(faulty.calls)).to.not.equal(undefined);
    return (sync as CallRecord).n;
  }

  for (const code of ['EIO', 'ENOSPC'] as const) {
    it(`${code}: an add whose rename landed but whose directory fsync failed is undone, reported failed, and not found`, async () => {
      const store = new KeyStore({ fs: faulty, dataDir: tmp.dir, logger: silentLogger });
      const n = await dirSyncAfterRename(() => store.add(key()));
      const before = await nodeFs.readFile(keysFile(), 'utf8');
      const lost = key();
      faulty.arm({ failAt: n, code });
      const err = await store.add(lost).then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      );
      expect(faulty.fired?.op, 'the planned fault fired').to.equal('handle.sync');
      expect(err?.code, 'the add is reported failed').to.equal(code);
      expect(await nodeFs.readFile(keysFile(), 'utf8'), 'keys.json is as it was').to.equal(before);
      expect(await store.get(lost.id), 'the same instance agrees').to.equal(undefined);
      expect(await store.findByHash(lost.hash)).to.equal(undefined);
      expect(await new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger }).get(lost.id), 'a fresh reader agrees').to.equal(undefined);
      expect((await nodeFs.readdir(tmp.dir)).sort(), 'no lock or temp file left').to.deep.equal(['keys.json']);
      await store.add(lost);
      expect((await store.get(lost.id))?.id, 'the next add succeeds').to.equal(lost.id);
    });

    it(`${code}: a revocation whose directory fsync failed is undone: the key still works, as reported`, async () => {
      const store = new KeyStore({ fs: faulty, dataDir: tmp.dir, logger: silentLogger });
      const k = key();
      await store.add(k);
      const revoke = (r: KeyRecord): void => {
        r.revokedAt = '2024-03-03T00:00:00.000Z';
      };
      const n = await dirSyncAfterRename(() => store.update(key().id, revoke)); // an unknown id: same calls, no change
      const before = await nodeFs.readFile(keysFile(), 'utf8');
      faulty.arm({ failAt: n, code });
      const err = await store.update(k.id, revoke).then(
        () => undefined,
        (e: unknown) => e as { code?: string },
      );
      expect(faulty.fired?.op, 'the planned fault fired').to.equal('handle.sync');
      expect(err?.code, 'the revocation is reported failed').to.equal(code);
      expect(await nodeFs.readFile(keysFile(), 'utf8'), 'keys.json is as it was').to.equal(before);
      expect((await store.findByHash(k.hash))?.revokedAt, 'the same instance agrees').to.equal(null);
      expect((await new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger }).get(k.id))?.revokedAt, 'a fresh reader agrees').to.equal(null);
      expect((await nodeFs.readdir(tmp.dir)).sort(), 'no lock or temp file left').to.deep.equal(['keys.json']);
    });
  }

  it('a failed first write (no keys.json before) leaves no keys.json', async () => {
    const probe = await tmpDir('ks-keys-faulty-probe');
    const counter = new FaultyFs(nodeFs, { record: true });
    await new KeyStore({ fs: counter, dataDir: probe.dir, logger: silentLogger }).add(key());
    const rename = counter.calls.find((c) => c.op === 'rename') as CallRecord;
    const n = (counter.calls.find((c) => c.n > rename.n && c.op === 'handle.sync') as CallRecord).n;
    await probe.cleanup();
    const store = new KeyStore({ fs: faulty, dataDir: tmp.dir, logger: silentLogger });
    const lost = key();
    faulty.arm({ failAt: n, code: 'EIO' });
    const err = await store.add(lost).then(
      () => undefined,
      (e: unknown) => e as { code?: string },
    );
    expect(err?.code).to.equal('EIO');
    expect(await nodeFs.readdir(tmp.dir)).to.deep.equal([]);
    expect(await store.get(lost.id)).to.equal(undefined);
  });
});
