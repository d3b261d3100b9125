import { rmSync } from 'node:fs';
import sqlite from 'node-sqlite3-wasm';
import type { Logger } from '../../common/log.js';

export type Database = InstanceType<typeof sqlite.Database>;

/** Changes to the schema or the tokenizer bump this: an index of another format is rebuilt, never misread. */
const FORMAT = '2';

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS items (id INTEGER PRIMARY KEY, path TEXT NOT NULL UNIQUE, blob TEXT NOT NULL, need INTEGER NOT NULL);
  CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(path, body, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3');
  CREATE VIRTUAL TABLE IF NOT EXISTS paths USING fts5(path, tokenize = 'unicode61 remove_diacritics 2', prefix = '2 3');
`;

/**
 * The search index's SQLite file opened (or created) for SearchDb, with a page cache of `cacheKib` (its share of
 * the process's, see pageCaches.ts), and whether the last process to use it closed it (false after a crash). One
 * that cannot be read, or holds another format, is deleted and started afresh: it is only a cache.
 */
export function openSearchFile(file: string, logger: Logger, cacheKib: number): { db: Database; closedCleanly: boolean } {
  // The VFS locks with a directory `<file>.lock`; only this process uses the file, so one present now was left by a crash.
  rmSync(`${file}.lock`, { recursive: true, force: true });
  try {
    return openOrThrow(file, cacheKib);
  } catch (err) {
    logger.warn('search index unreadable; starting it afresh', { file, error: String(err) });
    removeSearchFile(file);
    return openOrThrow(file, cacheKib);
  }
}

/** Deletes the index file and what SQLite keeps beside it. */
export function removeSearchFile(file: string): void {
  for (const f of [file, `${file}-journal`, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
  rmSync(`${file}.lock`, { recursive: true, force: true });
}

/** The page cache of a check (KiB): it reads each page once, so a larger one would only grow the heap. */
const CHECK_CACHE_KIB = 2_048;

/** SQLite's own consistency check of an open file (pages, free list, indexes). */
export function passesQuickCheck(db: Database): boolean {
  const row = db.get('PRAGMA quick_check');
  return row !== null && Object.values(row)[0] === 'ok';
}

/**
 * The check of a file not closed cleanly, on a connection of its own that is closed after (see fileCheck.ts,
 * which runs it in a worker thread). False when the check fails or the file cannot be read.
 */
export function checkFile(file: string): boolean {
  rmSync(`${file}.lock`, { recursive: true, force: true });
  let db: Database | undefined;
  try {
    db = connect(file, CHECK_CACHE_KIB);
    return passesQuickCheck(db);
  } catch {
    return false;
  } finally {
    try {
      db?.close();
    } catch {
      // a file that failed its check may fail its close too: it is rebuilt either way
    }
  }
}

/** A connection to the file as every user of it opens one: exclusive, write-ahead log, never waiting for the disk. */
function connect(file: string, cacheKib: number): Database {
  const db = new sqlite.Database(file);
  try {
    // Exclusive locking first: the package's file layer opens a WAL file only under it, and this process
    // is the file's one user anyway. Its rollback journal did not survive SIGKILL reliably (5 of 15
    // killed writers left a malformed file, measured); WAL with exclusive locking came back whole 10 of 10.
    db.exec('PRAGMA locking_mode = EXCLUSIVE');
    const mode = db.get('PRAGMA journal_mode = WAL');
    if (mode?.journal_mode !== 'wal') throw new Error(`search index: journal mode ${String(mode?.journal_mode)}, expected wal`);
    db.exec(`PRAGMA synchronous = OFF; PRAGMA cache_size = -${cacheKib};`);
    return db;
  } catch (err) {
    db.close();
    throw err;
  }
}

function openOrThrow(file: string, cacheKib: number): { db: Database; closedCleanly: boolean } {
  const db = connect(file, cacheKib);
  try {
    db.exec(SCHEMA);
    const format = metaOf(db, 'format');
    // Format 1 lacked only the index of paths, which its items table holds: filled in place, not rebuilt
    // (a rebuild reads every item again: 18-24 s at 50,000 items of 2 KB).
    if (format === '1') db.exec('DELETE FROM paths; INSERT INTO paths (rowid, path) SELECT id, path FROM items;');
    else if (format !== null && format !== FORMAT) throw new Error(`search index format ${format}, expected ${FORMAT}`);
    const clean = metaOf(db, 'clean');
    db.run('INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?), (?, ?)', ['format', FORMAT, 'clean', '0']);
    // A new file is clean; an old one is clean only if it says so.
    return { db, closedCleanly: format === null || clean === '1' };
  } catch (err) {
    db.close();
    throw err;
  }
}

/** A value of the `meta` table (null when absent). */
export function metaOf(db: Database, key: string): string | null {
  const row = db.get('SELECT value FROM meta WHERE key = ?', [key]);
  return row && typeof row.value === 'string' ? row.value : null;
}
