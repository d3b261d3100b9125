import { setTimeout as delay } from 'node:timers/promises';
import { createHash } from 'node:crypto';
import net from 'node:net';
import { errnoCode } from '../../common/errors.js';
import { writeFileDurable } from './durable.js';
import { DataDirInUse } from '../errors.js';
import type { FsPromises } from './fs.js';
import { withLock } from './lockFile.js';

/**
 * One server per data directory, held by a lock the kernel releases when its
 * holder dies, so that a restart after a crash always succeeds and never needs
 * a repair. A pid in a file cannot promise that: a killed server that its parent
 * has not reaped yet (a zombie) still answers kill(pid, 0), and so does an
 * unrelated process that was given the same pid later.
 *
 * Node has no flock() or fcntl() locks, and the npm packages that offer them are
 * native addons that need a compiler at install time. A listening Unix-domain
 * socket is the lock instead: binding a name is atomic (EADDRINUSE for the
 * second binder), and the kernel closes the socket when the process exits, zombie
 * or not (a process's files are closed before it becomes one). Node opens sockets
 * close-on-exec, so a git child that outlives a killed server does not keep it.
 *
 * On Linux the name is in the abstract namespace (it starts with a NUL byte,
 * `\0knowledge-store/<hash of the directory's device and inode>`): no file, so
 * nothing can be left behind and there is no stale socket to tell from a live one;
 * the device and inode name the directory however it is reached (symlinks, `..`).
 * Abstract names are per network namespace: two containers with separate networks
 * sharing one data directory are not kept apart (a pid file never did that either).
 *
 * Elsewhere (no abstract namespace) it is a socket file, `<dataDir>/server.sock`,
 * which outlives a killed holder. A starter that finds it tells a stale one from a
 * live one by connecting (refused: nobody listens), and replaces a stale one only
 * under the file's O_EXCL lock, so two starters that both find it stale cannot
 * both unlink and bind: the second re-probes, finds the first listening, and stops.
 *
 * `server.lock` still holds the holder's pid, written once the socket is bound:
 * it is only information, for the message that names the running server.
 */
export interface DataDirLock {
  /** Releases the directory: removes the pid file, then closes the socket. */
  release(): Promise<void>;
}

export interface DataDirLockOptions {
  /**
   * How long a starter keeps trying while the lock is held. kill() returns before
   * its target has exited, so a restart issued right after it can find the old
   * server still closing its files; a second start beside a live server still
   * fails well within a couple of seconds.
   */
  waitMs?: number;
  /** Which kind of socket to use (tests exercise the socket-file variant on Linux). */
  platform?: NodeJS.Platform;
}

const POLL_MS = 25;

export async function lockDataDir(fs: FsPromises, dataDir: string, options: DataDirLockOptions = {}): Promise<DataDirLock> {
  const { waitMs = 1_000 } = options;
  await fs.mkdir(dataDir, { recursive: true });
  const address = await lockAddress(fs, dataDir, options.platform);
  const started = Date.now();
  for (;;) {
    const socket = address.abstract ? await bind(address.path) : await bindSocketFile(fs, address.path);
    if (socket) return holding(fs, dataDir, socket);
    if (Date.now() - started >= waitMs) throw new DataDirInUse({ dataDir, pid: (await recordedPid(fs, dataDir)) ?? 0 });
    await delay(POLL_MS);
  }
}

/**
 * The pid of the server holding `dataDir`, or null when none does. The lock is
 * probed, not the pid: a dead server's pid file says nothing. A held lock whose
 * pid file cannot be read gives 0.
 */
export async function serverPid(fs: FsPromises, dataDir: string, options: Pick<DataDirLockOptions, 'platform'> = {}): Promise<number | null> {
  let address: LockAddress;
  try {
    address = await lockAddress(fs, dataDir, options.platform);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null; // no data directory: nobody serves it
    throw err;
  }
  if (!(await isListening(address.path))) return null;
  return (await recordedPid(fs, dataDir)) ?? 0;
}

interface LockAddress {
  path: string;
  abstract: boolean;
}

async function lockAddress(fs: FsPromises, dataDir: string, platform: NodeJS.Platform = process.platform): Promise<LockAddress> {
  if (platform !== 'linux') return { path: `${dataDir}/server.sock`, abstract: false };
  const { dev, ino } = await fs.stat(dataDir);
  const id = createHash('sha256').update(`${dev}:${ino}`).digest('hex').slice(0, 32);
  return { path: `\0knowledge-store/${id}`, abstract: true };
}

async function holding(fs: FsPromises, dataDir: string, socket: net.Server): Promise<DataDirLock> {
  const pidFile = `${dataDir}/server.lock`;
  try {
    await writeFileDurable(fs, pidFile, `${process.pid}\n`);
  } catch (err) {
    await close(socket);
    throw err;
  }
  let released: Promise<void> | undefined;
  return {
    release: () =>
      (released ??= (async () => {
        // While the socket is open no other server can have written its pid here: remove ours first.
        if ((await recordedPid(fs, dataDir)) === process.pid) await fs.unlink(pidFile).catch(() => undefined);
        await close(socket);
      })()),
  };
}

/** Listens on `path`; null when another socket already has it. */
function bind(path: string): Promise<net.Server | null> {
  return new Promise((resolve, reject) => {
    // Connections are only probes (`serverPid`, a starter checking a socket file): hang up at once.
    const server = net.createServer((conn) => conn.destroy());
    server.once('error', (err) => (errnoCode(err) === 'EADDRINUSE' ? resolve(null) : reject(err)));
    server.listen({ path, exclusive: true }, () => {
      server.removeAllListeners('error');
      // A failed accept() does not touch the bound socket; it must not crash the server either.
      server.on('error', () => undefined);
      // The lock alone never keeps a process alive: it lives as long as whatever holds it.
      server.unref();
      resolve(server);
    });
  });
}

/** `bind` on a socket file, replacing one that nobody listens on (left by a killed holder). */
async function bindSocketFile(fs: FsPromises, path: string): Promise<net.Server | null> {
  return withLock(fs, path, async () => {
    const socket = await bind(path);
    if (socket || (await isListening(path))) return socket;
    await fs.unlink(path).catch(() => undefined);
    return bind(path);
  });
}

function isListening(path: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const conn = net.connect({ path });
    conn.once('connect', () => {
      conn.destroy();
      resolve(true);
    });
    conn.once('error', (err) => {
      const code = errnoCode(err);
      // Refused: the name is free or the file is a dead socket; missing: never bound.
      if (code === 'ECONNREFUSED' || code === 'ENOENT') resolve(false);
      else reject(err);
    });
  });
}

function close(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

async function recordedPid(fs: FsPromises, dataDir: string): Promise<number | null> {
  const pid = Number((await fs.readFile(`${dataDir}/server.lock`, 'utf8').catch(() => '')).trim());
  return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
}
