import type { Logger } from '../../common/log.js';
import { Slots } from '../../common/slots.js';
import type { DirectoryWatch } from '../fs/fileWatch.js';
import type { FsPromises } from '../fs/fs.js';
import { withLock } from '../fs/lockFile.js';
import { KeyFiles, type KeyChange, type LogPosition } from './keyFiles.js';
import type { KeyRecord } from './keyRecord.js';
import { nextTurn } from '../../common/turn.js';

export type { KeyRecord } from './keyRecord.js';

/**
 * API keys live outside git, in the data directory (`keys.json` and the log of changes since,
 * `keys.log`: see keyFiles.ts): only a SHA-256 of each secret is kept, so a clone never carries a
 * key or its hash. The CLI and the server share the files: every change is made under keys.json's
 * O_EXCL lock, and a process notices another's change by keys.json's inode, size and mtime and the
 * log's inode and size, reading only the lines added since it last looked.
 */
export class KeyStore {
  private byHash = new Map<string, KeyRecord>();
  private byId = new Map<string, KeyRecord>();
  /** Where the maps stand in the files; null until read (or after a failed write left it unknown): read whole. */
  private at: { snapshot: string; snapshotBytes: number; log: LogPosition | null } | null = null;
  /** One reading or writing of the files at a time in this process: two catch-ups applying the same lines out of order could bring back a revoked key. */
  private readonly oneAtATime = new Slots(1);
  private checking: { startedAt: number; done: Promise<void> } | null = null;
  /** Last uses not yet written out, in ms: made into text when written or listed, not on every request. */
  private readonly used = new Map<string, number>();
  private readonly files: KeyFiles;
  /** Set when the watched data directory reports a change to the key files; null when not watching. */
  private dirty: boolean | null = null;
  private stopWatching: (() => void) | null = null;

  constructor(
    private readonly options: {
      fs: FsPromises;
      dataDir: string;
      logger: Logger;
      /**
       * Watches the data directory (the server passes one): a lookup then stats the key files only
       * after a change was reported, instead of on every request (a sixth of a GET's CPU).
       */
      watch?: DirectoryWatch;
      /**
       * Whether a log of `logBytes` beside a keys.json of `snapshotBytes` is folded into it, after a change.
       * By default once it is as large as keys.json and at least 64 KiB: a reader never reads more than
       * about twice the keys, and a fold (the whole file written) comes once per its size in changes.
       */
      foldWhen?: (logBytes: number, snapshotBytes: number) => boolean;
    },
  ) {
    this.files = new KeyFiles(options.fs, options.dataDir);
  }

  /** Starts watching the data directory, if a watch was given; without one (or if it fails) every lookup stats the files. */
  async startWatching(): Promise<void> {
    const { watch, dataDir, fs, logger } = this.options;
    if (!watch || this.stopWatching) return;
    await fs.mkdir(dataDir, { recursive: true });
    const fallBack = (err: unknown): void => {
      logger.warn('cannot watch the data directory; checking the key files on every request', { error: String(err) });
      this.stopWatch();
    };
    try {
      this.stopWatching = watch(
        dataDir,
        (name) => {
          if (name === null || name === 'keys.json' || name === 'keys.log') this.dirty = true;
        },
        fallBack,
      );
      this.dirty = true;
    } catch (err) {
      fallBack(err);
    }
  }

  stopWatch(): void {
    this.stopWatching?.();
    this.stopWatching = null;
    this.dirty = null;
  }

  /**
   * The active or revoked key with this secret hash, as the files stand now: a
   * key revoked or created by the CLI counts from the very next request. Costs
   * two stats (the lines added since read, only when there are some), shared by
   * the requests that arrive while they run; when watching, one turn of the
   * event loop instead, and the stats only after a change was reported.
   */
  async findByHash(hash: string): Promise<KeyRecord | undefined> {
    await this.refresh();
    return this.byHash.get(hash);
  }

  async get(keyId: string): Promise<KeyRecord | undefined> {
    await this.refresh();
    return this.byId.get(keyId);
  }

  async list(orgId?: string): Promise<KeyRecord[]> {
    await this.refresh();
    return [...this.byId.values()].filter((k) => orgId === undefined || k.orgId === orgId).map((k) => this.withUsage(k));
  }

  async add(record: KeyRecord): Promise<void> {
    await this.write(() => [{ key: { ...record } }]);
  }

  /**
   * Adds the records `choose` picks from the keys as they stand under the lock (a check made
   * before taking the lock could miss a key added meanwhile). `choose` may throw: nothing changes.
   */
  async addChosen(choose: (existing: readonly KeyRecord[]) => KeyRecord[]): Promise<KeyRecord[]> {
    let added: KeyRecord[] = [];
    await this.write(() => {
      added = choose([...this.byId.values()].map((k) => ({ ...k })));
      return added.map((k) => ({ key: { ...k } }));
    });
    return added;
  }

  /** Applies `change` to one key under the lock; returns the key as stored, or undefined when there is none. */
  async update(keyId: string, change: (key: KeyRecord) => void): Promise<KeyRecord | undefined> {
    let result: KeyRecord | undefined;
    await this.write(() => {
      const stored = this.byId.get(keyId);
      if (!stored) return [];
      const key = { ...stored };
      change(key);
      result = { ...key };
      return [{ key }];
    });
    return result;
  }

  /** Records a use in memory; `flushUsage` writes it out (never a disk write per request). */
  noteUsed(keyId: string, at: Date): void {
    this.used.set(keyId, at.getTime());
  }

  /** Writes out the last uses noted since the last flush: one line with the keys used, whatever the number of keys. */
  async flushUsage(): Promise<void> {
    if (this.used.size === 0) return;
    const used = new Map(this.used);
    await this.write(() => {
      const later: Record<string, string> = {};
      let any = false;
      for (const [id, ms] of used) {
        const key = this.byId.get(id);
        const at = isoTime(ms);
        if (key && at && (!key.lastUsedAt || key.lastUsedAt < at)) {
          later[id] = at;
          any = true;
        }
      }
      return any ? [{ used: later }] : [];
    });
    for (const [id, at] of used) if (this.used.get(id) === at) this.used.delete(id);
  }

  private withUsage(key: KeyRecord): KeyRecord {
    const at = isoTime(this.used.get(key.id));
    return at && (!key.lastUsedAt || key.lastUsedAt < at) ? { ...key, lastUsedAt: at } : { ...key };
  }

  /**
   * Under keys.json's lock, one at a time in this process: catches up with the files, asks `changesFor`
   * (which reads the maps as they now stand; it may throw, and then nothing changes) and appends
   * its changes to the log. The maps take them only once they are durable.
   */
  private async write(changesFor: () => KeyChange[]): Promise<void> {
    const { fs, dataDir, logger } = this.options;
    await fs.mkdir(dataDir, { recursive: true });
    await withLock(fs, this.files.snapshotPath, () =>
      this.oneAtATime.run(async () => {
        await this.catchUp();
        let at = this.at as NonNullable<KeyStore['at']>;
        // A line cut short by a crash would run into the next one: keys.json takes the whole lines first.
        if (at.log && at.log.end < at.log.size) at = await this.fold();
        const changes = changesFor();
        if (changes.length === 0) return;
        let log: LogPosition;
        try {
          log = await this.files.append(changes, at.log === null);
        } catch (err) {
          // The line may have reached the disk although the append failed (its fsync did): put the
          // files back as they were, so that the files, the maps and the answer all say "nothing
          // changed" (a key reported as not made would otherwise work, one not revoked would not).
          await this.undo(at.log !== null).catch(() => {
            this.at = null; // the files are as they are: read them whole next time
          });
          throw err;
        }
        for (const change of changes) this.apply(change);
        // Stamped while the lock is held, so this is the log just written (every writer takes the lock): the next
        // lookup reads nothing back.
        at.log = log;
        if ((this.options.foldWhen ?? foldByDefault)(log.end, at.snapshotBytes)) {
          await this.fold().catch((err: unknown) => {
            this.at = null;
            logger.warn('could not fold the key log into keys.json; it goes on growing until the next write', { error: String(err) });
          });
        }
      }),
    );
  }

  /** The files back to the maps' state (the change that failed not applied): a new log removed, an older one folded in. */
  private async undo(hadLog: boolean): Promise<void> {
    if (hadLog) await this.fold();
    else await this.files.removeLog();
  }

  /** Writes the maps as keys.json and removes the log (under the lock, one at a time). */
  private async fold(): Promise<NonNullable<KeyStore['at']>> {
    this.at = null;
    const snapshot = await this.files.fold([...this.byId.values()]);
    this.at = { snapshot: snapshot.stamp, snapshotBytes: snapshot.bytes, log: null };
    return this.at;
  }

  /**
   * Brings the maps up to date with the files as they are now. A caller may share a
   * check already running only if that check began after the caller arrived: one
   * that began earlier may have read the files before a change the caller must see.
   */
  private async refresh(): Promise<void> {
    const arrived = performance.now();
    for (;;) {
      const running = this.checking;
      if (running && running.startedAt >= arrived) return running.done;
      if (running) {
        await running.done.catch(() => undefined);
        continue;
      }
      const startedAt = performance.now();
      const done = this.reload().finally(() => {
        if (this.checking?.done === done) this.checking = null;
      });
      this.checking = { startedAt, done };
      return done;
    }
  }

  private async reload(): Promise<void> {
    if (this.dirty !== null) {
      // One turn of the event loop first: a change made before this request was sent (a CLI
      // `key revoke` that has exited) was queued by the kernel before the request's bytes, so
      // its notification is handled in this poll phase, before setImmediate's callback.
      await nextTurn();
      if (this.dirty === false) return;
      if (this.dirty) this.dirty = false;
    }
    await this.oneAtATime.run(() => this.catchUp());
  }

  /**
   * Reads what changed in the files since the maps last did: nothing when neither changed, the
   * log's new lines when only it grew, both files otherwise. Runs one at a time (oneAtATime).
   */
  private async catchUp(): Promise<void> {
    // Both at once (one stat's wait, not two). A change landing meanwhile may be seen next time, as with
    // any check; a log read is safe either way, since keys.json is looked at again once the log is open.
    const [log, snapshot] = await Promise.all([this.files.statLog(), this.files.snapshotStamp()]);
    const at = this.at;
    if (!at || snapshot.stamp !== at.snapshot) return this.loadWhole();
    if (!log) return at.log ? this.loadWhole() : undefined;
    if (at.log && (log.ino !== at.log.ino || log.size < at.log.end)) return this.loadWhole();
    if (at.log && log.size === at.log.size) return;
    const handle = await this.files.openLog();
    if (!handle) return this.loadWhole();
    try {
      // A log made after a fold is younger than that fold's keys.json: if the log opened is such a one
      // (even with the old one's inode, which the file system may reuse), keys.json shows the fold now.
      if ((await this.files.snapshotStamp()).stamp !== at.snapshot) return await this.loadWhole();
      const { changes, at: read } = await this.files.readLog(handle, at.log?.end ?? 0);
      if (at.log && read.ino !== at.log.ino) return await this.loadWhole();
      for (const change of changes) this.apply(change);
      at.log = read;
    } finally {
      await handle.close();
    }
  }

  /** Reads keys.json and the whole log. Runs one at a time (oneAtATime). */
  private async loadWhole(): Promise<void> {
    for (let attempt = 1; ; attempt++) {
      const snapshot = await this.files.snapshotStamp();
      const keys = await this.files.readSnapshot();
      const handle = await this.files.openLog();
      try {
        // A fold between reading keys.json and opening the log would pair an old keys.json
        // with a log that does not follow it (the lines folded in missing): read both again.
        if ((await this.files.snapshotStamp()).stamp !== snapshot.stamp && attempt < 5) continue;
        this.byHash = new Map(keys.map((k) => [k.hash, k]));
        this.byId = new Map(keys.map((k) => [k.id, k]));
        this.at = { snapshot: snapshot.stamp, snapshotBytes: snapshot.bytes, log: null };
        if (handle) {
          const { changes, at: read } = await this.files.readLog(handle, 0);
          for (const change of changes) this.apply(change);
          this.at.log = read;
        }
        return;
      } catch (err) {
        this.at = null;
        throw err;
      } finally {
        await handle?.close();
      }
    }
  }

  /** One line of the log onto the maps. Records are replaced, never changed in place: callers hold them. */
  private apply(change: KeyChange): void {
    if ('key' in change) {
      const key = change.key;
      const before = this.byId.get(key.id);
      if (before && before.hash !== key.hash) this.byHash.delete(before.hash);
      this.byId.set(key.id, key);
      this.byHash.set(key.hash, key);
      return;
    }
    for (const [id, at] of Object.entries(change.used)) {
      const key = this.byId.get(id);
      if (!key || (key.lastUsedAt && key.lastUsedAt >= at)) continue;
      const later = { ...key, lastUsedAt: at };
      this.byId.set(id, later);
      this.byHash.set(later.hash, later);
    }
  }
}

const foldByDefault = (logBytes: number, snapshotBytes: number): boolean => logBytes >= Math.max(64 * 1024, snapshotBytes);

function isoTime(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}
