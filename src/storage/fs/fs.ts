/**
 * The slice of `fs.promises` the storage layer uses. Node's `fs.promises`
 * satisfies it, and so does memfs's (unit tests), and so will a fault-injecting
 * wrapper (reliability tests): storage never imports `node:fs` directly.
 */
export interface FileHandleLike {
  write(data: Uint8Array | string): Promise<unknown>;
  chmod(mode: number): Promise<void>;
  sync(): Promise<void>;
  close(): Promise<void>;
  /** Reads at `position` (the pack reader reads objects at their offsets, never a whole pack). */
  read(buffer: Uint8Array, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  stat(): Promise<StatsLike>;
}

export interface StatsLike {
  mtimeMs: number;
  size: number;
  dev: number;
  ino: number;
  isDirectory(): boolean;
  isFile(): boolean;
}

export interface FsPromises {
  readFile(path: string): Promise<Buffer>;
  readFile(path: string, encoding: 'utf8'): Promise<string>;
  writeFile(path: string, data: Uint8Array | string): Promise<void>;
  appendFile(path: string, data: Uint8Array | string): Promise<void>;
  open(path: string, flags: string, mode?: number): Promise<FileHandleLike>;
  rename(from: string, to: string): Promise<void>;
  /** A second name for a file; fails with EEXIST rather than replace what `to` names. */
  link(existing: string, to: string): Promise<void>;
  mkdir(path: string, options?: { recursive?: boolean }): Promise<string | undefined>;
  readdir(path: string): Promise<string[]>;
  stat(path: string): Promise<StatsLike>;
  lstat(path: string): Promise<StatsLike>;
  unlink(path: string): Promise<void>;
  rmdir(path: string): Promise<void>;
  rm(path: string, options?: { recursive?: boolean; force?: boolean }): Promise<void>;
  readlink(path: string): Promise<string>;
  symlink(target: string, path: string): Promise<void>;
}
