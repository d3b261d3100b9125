import { errnoCode } from '../../common/errors.js';
import type { Logger } from '../../common/log.js';
import { CorruptStore } from '../errors.js';
import type { DirectoryWatch } from '../fs/fileWatch.js';
import type { FsPromises } from '../fs/fs.js';
import { fsyncDir } from '../fs/durable.js';
import { withLock } from '../fs/lockFile.js';

/**
 * API keys live outside git, in `<dataDir>/keys.json`:
 * only a SHA-256 of each secret is kept, so a clone never carries a key or its
 * hash. The CLI and the server share the file: every change is made under the
 * file's O_EXCL lock and lands by rename, and the server notices a changed file
 * by its inode, size and mtime.
 */
export interface KeyRecord {
  id: string;
  orgId: string;
  name: string;
  role: string;
  /** Hex SHA-256 of the secret. */
  hash: string;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt: string | null;
  /**
   * Folder prefixes ("docs/") the key is limited to. Absent on keys without scopes, so a key file
   * written before scopes existed reads unchanged (the file's version stays 1).
   */
  scopes?: string[];
}

interface KeyFile {
  version: 1;
  keys: KeyRecord[];
}

export class KeyStore {
  private byHash = new Map<string, KeyRecord>();
  private byId = new Map<string, KeyRecord>();
  private stamp: string | null = null;
  private checking: { startedAt: number; done: Promise<void> } | null = null;
  /** Last uses not yet written out, in ms: made into text when written or listed, not on every request. */
  private readonly used = new Map<string, number>();
  readonly path: string;
  /** Set when the watched data directory reports a change to keys.json; null when not watching. */
  private dirty: boolean | null = null;
  private stopWatching: (() => void) | null = null;

  constructor(
    private readonly options: {
      fs: FsPromises;
      dataDir: string;
      logger: Logger;
      /**
       * Watches the data directory (the server passes one): a lookup then stats keys.json only
       * after a change was reported, instead of on every request (a sixth of a GET's CPU).
       */
      watch?: DirectoryWatch;
    },
  ) {
    this.path = `${options.dataDir}/keys.json`;
  }

  /** Starts watching the data directory, if a watch was given; without one (or if it fails) every lookup stats the file. */
  async startWatching(): Promise<void> {
    const { watch, dataDir, fs, logger } = this.options;
    if (!watch || this.stopWatching) return;
    await fs.mkdir(dataDir, { recursive: true });
    const fallBack = (err: unknown): void => {
      logger.warn('cannot watch the data directory; checking keys.json on every request', { error: String(err) });
      this.stopWatch();
    };
    try {
      this.stopWatching = watch(
        dataDir,
        (name) => {
          if (name === null || name === 'keys.json') this.dirty = true;
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
   * The active or revoked key with this secret hash, as keys.json stands now: a
   * key revoked or created by the CLI counts from the very next request. Costs
   * one stat of the file (re-read only when it changed), shared by the requests
   * that arrive while it runs; when watching, one turn of the event loop
   * instead, and a stat only after a change was reported.
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
    await this.mutate((file) => {
      file.keys.push(record);
    });
  }

  /**
   * Adds the records `choose` picks from the file's keys as they stand under the lock (a check made
   * before taking the lock could miss a key added meanwhile). `choose` may throw: nothing changes.
   */
  async addChosen(choose: (existing: readonly KeyRecord[]) => KeyRecord[]): Promise<KeyRecord[]> {
    let added: KeyRecord[] = [];
    await this.mutate((file) => {
      added = choose(file.keys.map((k) => ({ ...k })));
      file.keys.push(...added);
    });
    return added;
  }

  /** Applies `change` to one key under the lock; returns the key as stored, or undefined when there is none. */
  async update(keyId: string, change: (key: KeyRecord) => void): Promise<KeyRecord | undefined> {
    let result: KeyRecord | undefined;
    await this.mutate((file) => {
      const key = file.keys.find((k) => k.id === keyId);
      if (key) {
        change(key);
        result = { ...key };
      }
    });
    return result;
  }

  /** Records a use in memory; `flushUsage` writes it out (never a disk write per request). */
  noteUsed(keyId: string, at: Date): void {
    this.used.set(keyId, at.getTime());
  }

  async flushUsage(): Promise<void> {
    if (this.used.size === 0) return;
    const used = new Map(this.used);
    await this.mutate((file) => {
      for (const key of file.keys) {
        const at = isoTime(used.get(key.id));
        if (at && (!key.lastUsedAt || key.lastUsedAt < at)) key.lastUsedAt = at;
      }
    });
    for (const [id, at] of used) if (this.used.get(id) === at) this.used.delete(id);
  }

  private withUsage(key: KeyRecord): KeyRecord {
    const at = isoTime(this.used.get(key.id));
    return at && (!key.lastUsedAt || key.lastUsedAt < at) ? { ...key, lastUsedAt: at } : { ...key };
  }

  private async mutate(change: (file: KeyFile) => void): Promise<void> {
    const { fs, dataDir } = this.options;
    await fs.mkdir(dataDir, { recursive: true });
    await withLock(fs, this.path, async (lock) => {
      const before = await this.readText();
      const file = this.parse(before);
      change(file);
      const written = `${JSON.stringify(file, null, 2)}\n`;
      try {
        await lock.commit(written);
      } catch (err) {
        // The rename may have landed and only the directory fsync (which makes it durable) failed:
        // keys.json then shows the change while the caller is told it failed, and a key reported
        // as not created would work (or one reported as not revoked would not). Put the previous
        // content back so that the file, the maps and the answer all say "nothing changed".
        if (lock.committed) await this.undo(before, written).catch(() => undefined);
        throw err;
      }
      // Stamped while the lock is held, so this is the file just written (every writer takes the lock): the next
      // lookup does not read back what this process wrote, a whole parse of the file (0.4-0.7 s at 100,000 keys,
      // after every usage flush). A stat that fails leaves the stamp unknown: the next lookup reads it once.
      this.install(file, await this.stampNow().catch(() => null));
    });
  }

  /** Sets keys.json back from `written` to `before` (deleting it when there was none), under its lock. */
  private async undo(before: string | null, written: string): Promise<void> {
    const { fs, dataDir } = this.options;
    await withLock(fs, this.path, async (lock) => {
      if ((await this.readText()) !== written) return; // another writer has changed it since: not ours to undo
      if (before !== null) {
        await lock.commit(before);
      } else {
        await fs.unlink(this.path);
        await fsyncDir(fs, dataDir);
      }
    });
  }

  /**
   * Brings the maps up to date with the file as it is now. A caller may share a
   * check already running only if that check began after the caller arrived: one
   * that began earlier may have read the file before a change the caller must see.
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
      await new Promise((resolve) => setImmediate(resolve));
      if (this.dirty === false) return;
      if (this.dirty) this.dirty = false;
    }
    const stamp = await this.stampNow();
    if (stamp !== this.stamp) this.install(await this.readFile(), stamp);
  }

  /** What tells one keys.json from another: its inode (each write lands by rename), size and mtime; `missing` when there is none. */
  private async stampNow(): Promise<string> {
    try {
      const s = await this.options.fs.stat(this.path);
      return `${s.ino}:${s.size}:${s.mtimeMs}`;
    } catch (err) {
      if (errnoCode(err) !== 'ENOENT') throw err;
      return 'missing';
    }
  }

  private install(file: KeyFile, stamp: string | null): void {
    this.byHash = new Map(file.keys.map((k) => [k.hash, k]));
    this.byId = new Map(file.keys.map((k) => [k.id, k]));
    this.stamp = stamp;
  }

  private async readFile(): Promise<KeyFile> {
    return this.parse(await this.readText());
  }

  /** The key file's text, or null when there is none yet. */
  private async readText(): Promise<string | null> {
    try {
      return await this.options.fs.readFile(this.path, 'utf8');
    } catch (err) {
      if (errnoCode(err) === 'ENOENT') return null;
      throw err;
    }
  }

  private parse(text: string | null): KeyFile {
    if (text === null) return { version: 1, keys: [] };
    try {
      const file = JSON.parse(text) as KeyFile;
      if (file.version !== 1 || !Array.isArray(file.keys)) throw new Error('unknown layout');
      return file;
    } catch (err) {
      throw new CorruptStore({ where: this.path, reason: `cannot read the key file (${String(err)})` });
    }
  }
}

function isoTime(ms: number | undefined): string | undefined {
  return ms === undefined ? undefined : new Date(ms).toISOString();
}
