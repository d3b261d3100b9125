import { promises as nodeFs } from 'node:fs';
import { expect } from 'chai';
import { silentLogger } from '../../src/log.js';
import { CorruptStore } from '../../src/storage/errors.js';
import type { FsPromises } from '../../src/storage/fs.js';
import { watchDirectory } from '../../src/fileWatch.js';
import { KeyStore, type KeyRecord } from '../../src/storage/keyStore.js';
import { tmpDir } from '../support/tmp.js';

/**
 * The key file shared by the server and the CLI (design.md, storage rule 8;
 * contract §1: a key created while the server runs works within a second, and
 * concurrent use never corrupts state). Real disk: inodes, renames, O_EXCL.
 */

const fs = nodeFs as unknown as FsPromises;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

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
