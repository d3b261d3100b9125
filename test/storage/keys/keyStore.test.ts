import { promises as nodeFs } from 'node:fs';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import { CorruptStore } from '../../../src/storage/errors.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { watchDirectory } from '../../../src/storage/fs/fileWatch.js';
import { KeyStore, type KeyRecord } from '../../../src/storage/keys/keyStore.js';
import { FaultyFs } from '../../support/faultyFs.js';
import { sleep } from '../../support/sleep.js';
import { KEY_FILES, keyFilesText, storedKeyRecords } from '../../support/keyFiles.js';
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
    expect((await storedKeyRecords(nodeFs.readFile, tmp.dir)).map((r) => r.id).sort()).to.deep.equal(expected);
    expect((await nodeFs.readdir(tmp.dir)).sort(), 'no lock or temp file left').to.deep.equal(['keys.log']);
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
    const before = await keyFilesText(nodeFs.readFile, tmp.dir);
    expect(await b.update('key_missing', () => expect.fail('must not be called'))).to.equal(undefined);
    expect(await keyFilesText(nodeFs.readFile, tmp.dir)).to.equal(before);
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

  it('refuses a corrupt line of keys.log with CorruptStore naming the file and the byte, and writes nothing', async () => {
    await a.add(key());
    await nodeFs.appendFile(`${tmp.dir}/keys.log`, '{"key":{"id":"key_1"}}\n');
    const before = await keyFilesText(nodeFs.readFile, tmp.dir);
    const fresh = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
    const error = await fresh.list().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(CorruptStore);
    expect((error as Error).message).to.match(/keys\.log: cannot read the line at byte \d+ \(neither a key nor its uses\)/);
    expect(await a.add(key()).then(() => 'added', (e: unknown) => e)).to.be.instanceOf(CorruptStore);
    expect(await keyFilesText(nodeFs.readFile, tmp.dir)).to.equal(before);
  });

  it('a change appends one line to keys.log and leaves keys.json as it was (2,000 keys)', async () => {
    const many = Array.from({ length: 2000 }, () => key());
    await nodeFs.writeFile(`${tmp.dir}/keys.json`, `${JSON.stringify({ version: 1, keys: many }, null, 2)}\n`);
    const snapshot = await nodeFs.stat(`${tmp.dir}/keys.json`);
    const logSize = async (): Promise<number> => (await nodeFs.stat(`${tmp.dir}/keys.log`).catch(() => ({ size: 0 }))).size;
    const grew: number[] = [];
    for (const change of [
      () => a.add(key()),
      () => a.update(many[7]?.id as string, (r) => void (r.revokedAt = '2024-04-04T00:00:00.000Z')),
      () => {
        for (const k of many.slice(0, 3)) a.noteUsed(k.id, new Date('2024-05-05T00:00:00Z'));
        return a.flushUsage();
      },
    ]) {
      const before = await logSize();
      await change();
      grew.push((await logSize()) - before);
    }
    const after = await nodeFs.stat(`${tmp.dir}/keys.json`);
    expect([after.ino, after.mtimeMs, after.size], 'keys.json untouched').to.deep.equal([snapshot.ino, snapshot.mtimeMs, snapshot.size]);
    expect(grew.every((bytes) => bytes > 0 && bytes < 400), `bytes appended: ${grew.join(', ')}`).to.equal(true);
    const fresh = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
    expect(await fresh.list()).to.have.length(2001);
    expect((await fresh.get(many[7]?.id as string))?.revokedAt).to.equal('2024-04-04T00:00:00.000Z');
    expect((await fresh.get(many[2]?.id as string))?.lastUsedAt).to.equal('2024-05-05T00:00:00.000Z');
  });

  it('a line cut short by a crash is not read, and the next write folds the whole lines into keys.json first', async () => {
    const kept = key();
    await a.add(kept);
    const cut = key();
    await nodeFs.appendFile(`${tmp.dir}/keys.log`, JSON.stringify({ key: cut }).slice(0, 40));
    const fresh = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
    expect((await fresh.list()).map((k) => k.id)).to.deep.equal([kept.id]);
    const next = key();
    await fresh.add(next);
    expect(await nodeFs.readFile(`${tmp.dir}/keys.log`, 'utf8'), 'the log starts again after the fold').to.equal(`${JSON.stringify({ key: next })}\n`);
    const snapshot = JSON.parse(await nodeFs.readFile(`${tmp.dir}/keys.json`, 'utf8')) as { version: number; keys: KeyRecord[] };
    expect(snapshot.keys.map((k) => k.id)).to.deep.equal([kept.id]);
    expect((await a.list()).map((k) => k.id)).to.deep.equal([kept.id, next.id]);
  });

  it('a fold between reading keys.json and opening the log is noticed: the keys folded in are not lost from the answer', async () => {
    const appender = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
    const folder = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger, foldWhen: () => true });
    const [k1, k2, k3] = [key(), key(), key()];
    await appender.add(k1); // keys.log: k1, no keys.json
    let reachedOpen: () => void = () => undefined;
    const atOpen = new Promise<void>((resolve) => (reachedOpen = resolve));
    let letOpen: () => void = () => undefined;
    const opened = new Promise<void>((resolve) => (letOpen = resolve));
    let gated = true;
    const gate = Object.create(fs) as FsPromises;
    gate.open = async (path: string, flags: string, mode?: number) => {
      if (gated && path.endsWith('/keys.log') && flags === 'r') {
        gated = false;
        reachedOpen();
        await opened;
      }
      return fs.open(path, flags, mode);
    };
    const reader = new KeyStore({ fs: gate, dataDir: tmp.dir, logger: silentLogger });
    const listing = reader.list();
    await atOpen; // the reader has read keys.json (none) and is about to open the log
    await folder.add(k2); // k1 and k2 folded into keys.json, the log removed
    await appender.add(k3); // a new log: k3
    letOpen();
    expect((await listing).map((k) => k.id).sort()).to.deep.equal([k1.id, k2.id, k3.id].sort());
  });

  it('folds the log into keys.json as it grows; other instances follow every change across the folds, never going back', async () => {
    const small = { fs, dataDir: tmp.dir, logger: silentLogger, foldWhen: (log: number, snapshot: number) => log >= Math.max(2048, snapshot) };
    const writers = [new KeyStore(small), new KeyStore(small)];
    const reader = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
    const model = new Map<string, KeyRecord>();
    const seenRevoked = new Set<string>();
    let folds = 0;
    let lastSnapshot = '';
    let biggestLog = 0;
    let biggestSnapshot = 0;
    const watchFiles = async (): Promise<void> => {
      const s = await nodeFs.stat(`${tmp.dir}/keys.json`).catch(() => null);
      const stamp = s ? `${s.ino}:${s.mtimeMs}` : '';
      if (stamp !== lastSnapshot) folds++;
      lastSnapshot = stamp;
      biggestSnapshot = Math.max(biggestSnapshot, s?.size ?? 0);
      biggestLog = Math.max(biggestLog, (await nodeFs.stat(`${tmp.dir}/keys.log`).catch(() => ({ size: 0 }))).size);
    };
    let random = 7;
    const next = (): number => (random = (random * 48271) % 2147483647);
    for (let round = 0; round < 60; round++) {
      const ops: Array<Promise<unknown>> = [];
      for (const w of writers) {
        const roll = next() % 3;
        const ids = [...model.keys()];
        if (roll === 0 || ids.length === 0) {
          const k = key();
          model.set(k.id, k);
          ops.push(w.add(k));
        } else if (roll === 1) {
          const id = ids[next() % ids.length] as string;
          const at = new Date(Date.UTC(2024, 0, 1, 0, round)).toISOString();
          const current = model.get(id) as KeyRecord;
          if (!current.revokedAt) model.set(id, { ...current, revokedAt: at });
          ops.push(w.update(id, (r) => void (r.revokedAt ??= at)));
        } else {
          for (const id of ids.slice(0, 20)) w.noteUsed(id, new Date(Date.UTC(2024, 1, 1, 0, round)));
          ops.push(w.flushUsage());
        }
      }
      // The reader looks while the writers write: what it once saw is never taken back.
      ops.push(
        (async () => {
          for (let i = 0; i < 3; i++) {
            for (const k of await reader.list()) {
              if (seenRevoked.has(k.id)) expect(k.revokedAt, `round ${round}: ${k.id} revoked, then not`).to.be.a('string');
              if (k.revokedAt) seenRevoked.add(k.id);
            }
          }
        })(),
      );
      await Promise.all(ops);
      await watchFiles();
    }
    expect(folds, 'keys.json rewritten by folds').to.be.greaterThan(3);
    // Folded once it is as large as keys.json (and 2 KiB): it may pass that by one round's lines.
    expect(biggestLog, `the log stays near keys.json's size (${biggestSnapshot} bytes at most)`).to.be.below(Math.max(2048, biggestSnapshot) + 4096);
    const onDisk = await storedKeyRecords(nodeFs.readFile, tmp.dir);
    for (const store of [reader, ...writers, new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger })]) {
      const listed = await store.list();
      expect(listed.map((k) => [k.id, k.revokedAt]).sort()).to.deep.equal([...model.values()].map((k) => [k.id, k.revokedAt]).sort());
    }
    expect(onDisk.map((k) => [k.id, k.revokedAt]).sort()).to.deep.equal([...model.values()].map((k) => [k.id, k.revokedAt]).sort());
    expect(onDisk.filter((k) => k.lastUsedAt).length, 'the uses written').to.be.greaterThan(0);
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

  it('does not read back what it wrote itself (a usage flush, a key made), and reads only the new lines of another writer\'s change', async () => {
    let snapshotReads = 0;
    let logReads = 0;
    const reading = Object.create(fs) as FsPromises;
    reading.readFile = ((path: string, encoding: 'utf8') => {
      if (path.endsWith('/keys.json')) snapshotReads++;
      return fs.readFile(path, encoding);
    }) as unknown as FsPromises['readFile'];
    reading.open = (path: string, flags: string, mode?: number) => {
      if (path.endsWith('/keys.log') && flags === 'r') logReads++;
      return fs.open(path, flags, mode);
    };
    const server = new KeyStore({ fs: reading, dataDir: tmp.dir, logger: silentLogger, watch: watchDirectory });
    const cli = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
    await server.startWatching();
    try {
      const k = key();
      await server.add(k);
      server.noteUsed(k.id, new Date());
      await server.flushUsage();
      snapshotReads = logReads = 0;
      expect((await server.findByHash(k.hash))?.lastUsedAt, 'its own flush, as written').to.be.a('string');
      await sleep(50); // the watch's reports of its own appends
      expect((await server.findByHash(k.hash))?.id).to.equal(k.id);
      expect([snapshotReads, logReads], 'reads of the key files after its own writes').to.deep.equal([0, 0]);
      await cli.update(k.id, (r) => {
        r.revokedAt = new Date().toISOString();
      });
      expect((await server.findByHash(k.hash))?.revokedAt, 'the other writer\'s revocation').to.be.a('string');
      expect([snapshotReads, logReads], 'the log\'s new line read, keys.json not').to.deep.equal([0, 1]);
      // Its next write finds nothing new under the lock, and nothing is read after it.
      server.noteUsed(k.id, new Date(Date.now() + 1000));
      await server.flushUsage();
      await sleep(50);
      expect((await server.findByHash(k.hash))?.revokedAt, 'the revocation kept through its own write').to.be.a('string');
      expect([snapshotReads, logReads]).to.deep.equal([0, 1]);
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

describe('storage/keyStore on a failing disk (every call of a change made to fail in turn)', () => {
  const revoke = (r: KeyRecord): void => {
    r.revokedAt = '2024-03-03T00:00:00.000Z';
  };
  interface Scenario {
    name: string;
    foldEvery?: boolean;
    /** Run on the real disk before the fault is armed; returns the key the change is about. */
    setUp: (store: KeyStore, dir: string) => Promise<KeyRecord>;
    change: (store: KeyStore, about: KeyRecord) => Promise<unknown>;
    /** Whether `store` shows the change. */
    shows: (store: KeyStore, about: KeyRecord) => Promise<boolean>;
    /** Whether the same instance must agree at once (a use not written stays noted in memory, shown by design). */
    sameInstance: boolean;
  }
  /** Keys beside the one a change is about, in each state a line can give (revoked, used): a fold or a replay must keep them so. */
  const others = async (store: KeyStore): Promise<void> => {
    const [revoked, used] = [key(), key()];
    await store.add(revoked);
    await store.add(used);
    await store.update(revoked.id, revoke);
    store.noteUsed(used.id, new Date('2024-05-05T00:00:00Z'));
    await store.flushUsage();
  };
  const added: Pick<Scenario, 'change' | 'shows' | 'sameInstance'> = {
    change: (store, about) => store.add(about),
    shows: async (store, about) => (await store.get(about.id)) !== undefined,
    sameInstance: true,
  };
  const scenarios: Scenario[] = [
    { name: 'the first add (no key file yet)', setUp: async () => key(), ...added },
    { name: 'an add beside a log', setUp: async (store) => (await others(store), key()), ...added },
    {
      name: 'a revocation',
      setUp: async (store) => {
        await others(store);
        const k = key();
        await store.add(k);
        return k;
      },
      change: (store, about) => store.update(about.id, revoke),
      shows: async (store, about) => (await store.get(about.id))?.revokedAt === '2024-03-03T00:00:00.000Z',
      sameInstance: true,
    },
    {
      name: 'a usage flush',
      setUp: async (store) => {
        await others(store);
        const k = key();
        await store.add(k);
        return k;
      },
      change: (store, about) => {
        store.noteUsed(about.id, new Date('2024-06-06T00:00:00Z'));
        return store.flushUsage();
      },
      shows: async (store, about) => (await store.get(about.id))?.lastUsedAt === '2024-06-06T00:00:00.000Z',
      sameInstance: false,
    },
    { name: 'an add that folds the log into keys.json', foldEvery: true, setUp: async (store) => (await others(store), key()), ...added },
    {
      name: 'an add after a crash cut a line short',
      setUp: async (store, dir) => {
        await others(store);
        await nodeFs.appendFile(`${dir}/keys.log`, '{"key":{"id":"key_cut"');
        return key();
      },
      ...added,
    },
  ];

  for (const scenario of scenarios) {
    it(`${scenario.name}: reported done exactly when it is on disk, nothing left behind, the next try succeeds`, async () => {
      const options = (fsys: FsPromises, dir: string) => ({ fs: fsys, dataDir: dir, logger: silentLogger, foldWhen: scenario.foldEvery ? () => true : undefined });
      // How many calls the change makes, on a disk that does not fail.
      const probe = await tmpDir('ks-keys-probe');
      const counter = new FaultyFs(nodeFs, { record: true });
      const probeStore = new KeyStore(options(counter, probe.dir));
      const probeKey = await scenario.setUp(probeStore, probe.dir);
      counter.reset();
      await scenario.change(probeStore, probeKey);
      const calls = counter.count;
      // Durable before it is reported: the log's line fsynced, and a new log's directory entry too.
      const logSync = counter.calls.findIndex((c) => c.op === 'handle.sync' && c.path.endsWith('/keys.log'));
      expect(logSync, 'the appended line is fsynced').to.be.greaterThan(-1);
      const dirSync = counter.calls.findIndex((c, i) => i > logSync && c.op === 'handle.sync' && c.path === probe.dir);
      if (scenario.name.startsWith('the first add')) expect(dirSync, 'the new log\'s directory entry is fsynced').to.be.greaterThan(logSync);
      const folds = counter.calls.some((c) => c.op === 'rename' && c.path.endsWith('/keys.json'));
      expect(folds, 'the change folds the log into keys.json').to.equal(scenario.foldEvery === true || scenario.name.includes('cut a line short'));
      await probe.cleanup();
      expect(calls).to.be.greaterThan(5);

      const outcomes: string[] = [];
      for (let n = 1; n <= calls; n++) {
        const tmp = await tmpDir('ks-keys-faulty');
        try {
          const faulty = new FaultyFs(nodeFs, { record: true });
          const store = new KeyStore(options(faulty, tmp.dir));
          const about = await scenario.setUp(store, tmp.dir);
          const othersBefore = (await new KeyStore(options(fs, tmp.dir)).list()).filter((k) => k.id !== about.id);
          const code = n % 2 ? 'EIO' : 'ENOSPC';
          faulty.arm({ failAt: n, code });
          const done = await scenario.change(store, about).then(
            () => true,
            (e: unknown) => {
              expect((e as { code?: string }).code, `call ${n}: the error is the disk's`).to.equal(code);
              return false;
            },
          );
          faulty.disarm();
          const fired = faulty.fired;
          expect(fired, `call ${n} of ${calls} was made`).to.not.equal(undefined);
          outcomes.push(`${n} ${fired?.op} ${fired?.path.replace(tmp.dir, '')}: ${done ? 'done' : 'failed'}`);
          const where = `call ${n} (${fired?.op} ${fired?.path}) failed, the change reported ${done ? 'done' : 'failed'}`;
          const fresh = new KeyStore(options(fs, tmp.dir));
          expect(await scenario.shows(fresh, about), `${where}: a fresh reader agrees`).to.equal(done);
          if (scenario.sameInstance) expect(await scenario.shows(store, about), `${where}: the same instance agrees`).to.equal(done);
          expect((await fresh.list()).filter((k) => k.id !== about.id), `${where}: the other keys as they were`).to.deep.equal(othersBefore);
          let left = (await nodeFs.readdir(tmp.dir)).filter((f) => !(KEY_FILES as readonly string[]).includes(f));
          if (fired?.op === 'unlink' && fired.path.endsWith('keys.json.lock')) {
            // The lock's own removal failed: it stays until it is judged stale (30 s), as after a crash.
            expect(left, where).to.deep.equal(['keys.json.lock']);
            await nodeFs.unlink(`${tmp.dir}/keys.json.lock`);
            left = [];
          }
          expect(left, `${where}: no lock or temp file left`).to.deep.equal([]);
          await scenario.change(store, about);
          expect(await scenario.shows(new KeyStore(options(fs, tmp.dir)), about), `${where}: the next try is on disk`).to.equal(true);
          const plain = (await storedKeyRecords(nodeFs.readFile, tmp.dir)).find((k) => k.id === about.id);
          expect(plain, `${where}: the files read plainly hold the key`).to.not.equal(undefined);
        } finally {
          await tmp.cleanup();
        }
      }
      expect(outcomes.some((o) => o.endsWith('failed')), outcomes.join('\n')).to.equal(true);
    });
  }
});
