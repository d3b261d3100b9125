import { CorruptStore } from '../errors.js';
import { fsyncDir, unlessMissing, writeFileDurable } from '../fs/durable.js';
import type { FileHandleLike, FsPromises } from '../fs/fs.js';
import type { KeyRecord } from './keyRecord.js';

/**
 * The key store's two files in the data directory:
 * - `keys.json`, every key as of the last fold (`{"version":1,"keys":[…]}`, as it always was);
 * - `keys.log`, the changes since, one JSON line each: `{"key":{…}}` (a key as it now stands: made,
 *   revoked, imported) or `{"used":{"<key id>":"<ISO time>",…}}` (last uses, written every 30 s).
 *
 * A change appends one line (fsynced) instead of rewriting every key: at 100,000 keys the whole file
 * is 31 MB and its rewrite held the event loop 0.35-0.63 s, every 30 s while keys were used. Once the
 * log is as large as the snapshot (and at least 64 KiB), the lines are folded into a new
 * keys.json and the log removed, so a reader never reads more than about twice the keys.
 *
 * Replaying a line is idempotent and a line states the whole record, so a crash between a
 * fold's rename and the log's removal (keys.json already holds the lines) loses nothing.
 * A line cut short by a crash has no newline: readers stop before it, the next writer folds the whole lines first.
 */
export type KeyChange = { key: KeyRecord } | { used: Record<string, string> };

/** What tells one keys.json from another (each lands by rename): inode, size, mtime; `missing` when there is none. */
export interface SnapshotStamp {
  stamp: string;
  bytes: number;
}

/** How far a reader has read the log: `end` is past its last whole line, `size` the bytes it saw. */
export interface LogPosition {
  ino: number;
  end: number;
  size: number;
}

interface KeyFile {
  version: 1;
  keys: KeyRecord[];
}

export class KeyFiles {
  readonly snapshotPath: string;
  readonly logPath: string;

  constructor(
    private readonly fs: FsPromises,
    readonly dir: string,
  ) {
    this.snapshotPath = `${dir}/keys.json`;
    this.logPath = `${dir}/keys.log`;
  }

  async snapshotStamp(): Promise<SnapshotStamp> {
    const s = await unlessMissing(this.fs.stat(this.snapshotPath));
    return s ? { stamp: `${s.ino}:${s.size}:${s.mtimeMs}`, bytes: s.size } : { stamp: 'missing', bytes: 0 };
  }

  /** The keys in keys.json; none when there is no file. A file that does not parse is refused, never taken as empty. */
  async readSnapshot(): Promise<KeyRecord[]> {
    const text = await unlessMissing(this.fs.readFile(this.snapshotPath, 'utf8'));
    if (text === null) return [];
    try {
      const file = JSON.parse(text) as KeyFile;
      if (file.version !== 1 || !Array.isArray(file.keys)) throw new Error('unknown layout');
      return file.keys;
    } catch (err) {
      throw new CorruptStore({ where: this.snapshotPath, reason: `cannot read the key file (${String(err)})` });
    }
  }

  /** The log's inode and size; null when there is none. */
  async statLog(): Promise<{ ino: number; size: number } | null> {
    const s = await unlessMissing(this.fs.stat(this.logPath));
    return s && { ino: s.ino, size: s.size };
  }

  /** The log open for reading; null when there is none. */
  openLog(): Promise<FileHandleLike | null> {
    return unlessMissing(this.fs.open(this.logPath, 'r'));
  }

  /** The whole lines of the open log from byte `from` on, and where they end. */
  async readLog(handle: FileHandleLike, from: number): Promise<{ changes: KeyChange[]; at: LogPosition }> {
    const s = await handle.stat();
    const room = Buffer.alloc(Math.max(s.size - from, 0));
    let got = 0;
    while (got < room.length) {
      const { bytesRead } = await handle.read(room, got, room.length - got, from + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
    const bytes = room.subarray(0, got); // what was there to read: never zeros taken for the file's bytes
    const whole = bytes.lastIndexOf(0x0a) + 1;
    const changes: KeyChange[] = [];
    let start = 0;
    for (let nl = bytes.indexOf(0x0a); nl !== -1 && nl < whole; nl = bytes.indexOf(0x0a, start)) {
      if (nl > start) changes.push(this.parseLine(bytes.toString('utf8', start, nl), from + start));
      start = nl + 1;
    }
    return { changes, at: { ino: s.ino, end: from + whole, size: from + bytes.length } };
  }

  /** Appends `changes` as lines and makes them durable (the directory too when the log is new); returns the log's new end. */
  async append(changes: readonly KeyChange[], isNew: boolean): Promise<LogPosition> {
    const handle = await this.fs.open(this.logPath, 'a', 0o644);
    let at: LogPosition;
    try {
      await handle.write(changes.map((c) => `${JSON.stringify(c)}\n`).join(''));
      await handle.sync();
      const s = await handle.stat();
      at = { ino: s.ino, end: s.size, size: s.size };
    } finally {
      await handle.close();
    }
    if (isNew) await fsyncDir(this.fs, this.dir);
    return at;
  }

  /**
   * Writes `keys` as the new keys.json (temp file, fsync, rename, directory fsync), then removes the
   * log, whose lines it now holds. The caller holds keys.json's lock throughout.
   */
  async fold(keys: readonly KeyRecord[]): Promise<SnapshotStamp> {
    const file: KeyFile = { version: 1, keys: [...keys] };
    await writeFileDurable(this.fs, this.snapshotPath, `${JSON.stringify(file, null, 2)}\n`, 0o644);
    await this.removeLog();
    return this.snapshotStamp();
  }

  /** Removes the log (durably); nothing to do when there is none. */
  async removeLog(): Promise<void> {
    if ((await unlessMissing(this.fs.unlink(this.logPath))) === null) return; // there was none
    await fsyncDir(this.fs, this.dir);
  }

  private parseLine(text: string, at: number): KeyChange {
    let change: unknown;
    try {
      change = JSON.parse(text);
    } catch (err) {
      throw this.corrupt(at, String(err));
    }
    if (isKeyChange(change)) return change;
    throw this.corrupt(at, 'neither a key nor its uses');
  }

  private corrupt(at: number, why: string): CorruptStore {
    return new CorruptStore({ where: this.logPath, reason: `cannot read the line at byte ${at} (${why})` });
  }
}

function isKeyChange(value: unknown): value is KeyChange {
  if (typeof value !== 'object' || value === null) return false;
  if ('key' in value) {
    const key = value.key as Partial<KeyRecord> | null;
    return typeof key === 'object' && key !== null && typeof key.id === 'string' && typeof key.hash === 'string';
  }
  if ('used' in value) {
    const used = value.used;
    return typeof used === 'object' && used !== null && Object.values(used).every((at) => typeof at === 'string');
  }
  return false;
}
