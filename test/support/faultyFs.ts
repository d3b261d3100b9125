import { promises as nodeFs } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import type { FileHandleLike, FsPromises, StatsLike } from '../../src/storage/fs/fs.js';

/**
 * A failing disk for reliability tests: node's `fs.promises` behind
 * the storage layer's `FsPromises`, counting every call, including the
 * write/chmod/sync/close calls made on the file handles it returns. Armed with
 * `{ failAt: N, code }`, the N-th counted call after arming throws an error
 * carrying `code` (as node's own system errors do) instead of running; every
 * other call, before and after, runs normally.
 *
 * A faulted call does nothing, except `close`, which closes the descriptor and
 * then reports the error, as close(2) does on Linux (the descriptor is freed
 * even when close fails); a file handle is never leaked by the wrapper itself.
 *
 * Every method is an own arrow-function property bound to this instance: the
 * storage layer hands isomorphic-git `Object.create(fs)` views of it and
 * isomorphic-git binds the methods, so nothing may depend on `this`.
 */
export type FaultCode = 'ENOSPC' | 'EIO';

export interface FaultPlan {
  /** The call, counted from 1 after `arm`, that fails. */
  failAt: number;
  code: FaultCode;
}

export interface CallRecord {
  /** Position among the counted calls since the last `arm`/`reset`. */
  n: number;
  /** `readFile`, `open`, `handle.sync`, ... */
  op: string;
  path: string;
}

export interface FaultyFsOptions {
  /**
   * Which calls count (and so may fail), by path; the others run untouched.
   * Defaults to every call. Tests narrow it to one repository so that timer-driven
   * I/O elsewhere (the key store re-reading its file every 250 ms) cannot shift the count.
   */
  counts?: (path: string, op: string) => boolean;
  /** Keeps the `CallRecord` of every counted call in `calls` (off by default: it grows). */
  record?: boolean;
}

const ERRNO: Record<FaultCode, number> = { ENOSPC: -28, EIO: -5 };
const MESSAGE: Record<FaultCode, string> = { ENOSPC: 'no space left on device', EIO: 'i/o error' };

export class FaultyFs implements FsPromises {
  /** Calls counted since the last `arm` or `reset`. */
  count = 0;
  /** The counted calls, in order, when `record` is on. */
  readonly calls: CallRecord[] = [];
  /** The call that was made to fail since the last `arm`, if it came. */
  fired: CallRecord | undefined;
  private plan: FaultPlan | undefined;
  private counts: (path: string, op: string) => boolean;
  private record: boolean;

  constructor(
    private readonly real: typeof nodeFs = nodeFs,
    options: FaultyFsOptions = {},
  ) {
    this.counts = options.counts ?? (() => true);
    this.record = options.record ?? false;
  }

  /** Counts from zero again and fails the `failAt`-th call with `code`, once. */
  arm(plan: FaultPlan): void {
    if (!Number.isInteger(plan.failAt) || plan.failAt < 1) throw new Error(`failAt must be a positive integer (got ${plan.failAt})`);
    this.reset();
    this.plan = plan;
  }

  /** No fault is pending any more; counting goes on. */
  disarm(): void {
    this.plan = undefined;
  }

  /** Counts from zero again, with no fault pending. */
  reset(options: FaultyFsOptions = {}): void {
    this.plan = undefined;
    this.fired = undefined;
    this.count = 0;
    this.calls.length = 0;
    if (options.counts) this.counts = options.counts;
    if (options.record !== undefined) this.record = options.record;
  }

  /**
   * Counts one call on `paths` (a call counts when any of its paths does); throws the
   * planned fault when this is the one. Calls on no path (isomorphic-git probes
   * `readFile()` with no argument to tell promise file systems apart) are not I/O.
   */
  private tick(op: string, ...paths: unknown[]): void {
    const named = paths.filter((p): p is string => typeof p === 'string');
    if (named.length === 0 || !named.some((p) => this.counts(p, op))) return;
    const call: CallRecord = { n: ++this.count, op, path: named.join(' -> ') };
    if (this.record) this.calls.push(call);
    if (this.plan && call.n === this.plan.failAt) {
      const { code } = this.plan;
      this.plan = undefined;
      this.fired = call;
      throw Object.assign(new Error(`${code}: ${MESSAGE[code]} (injected), ${op} '${call.path}'`), {
        code,
        errno: ERRNO[code],
        syscall: op,
        path: named[0],
      });
    }
  }

  readFile = (async (path: string, options?: unknown) => {
    this.tick('readFile', path);
    return this.real.readFile(path, options as BufferEncoding);
  }) as FsPromises['readFile'];

  writeFile = async (path: string, data: Uint8Array | string): Promise<void> => {
    this.tick('writeFile', path);
    await this.real.writeFile(path, data);
  };

  appendFile = async (path: string, data: Uint8Array | string): Promise<void> => {
    this.tick('appendFile', path);
    await this.real.appendFile(path, data);
  };

  open = async (path: string, flags: string, mode?: number): Promise<FileHandleLike> => {
    this.tick('open', path);
    return this.wrapHandle(await this.real.open(path, flags, mode), path);
  };

  rename = async (from: string, to: string): Promise<void> => {
    this.tick('rename', from, to);
    await this.real.rename(from, to);
  };

  link = async (existing: string, to: string): Promise<void> => {
    this.tick('link', existing, to);
    await this.real.link(existing, to);
  };

  mkdir = async (path: string, options?: { recursive?: boolean }): Promise<string | undefined> => {
    this.tick('mkdir', path);
    return this.real.mkdir(path, options);
  };

  readdir = async (path: string): Promise<string[]> => {
    this.tick('readdir', path);
    return this.real.readdir(path);
  };

  stat = async (path: string): Promise<StatsLike> => {
    this.tick('stat', path);
    return this.real.stat(path);
  };

  lstat = async (path: string): Promise<StatsLike> => {
    this.tick('lstat', path);
    return this.real.lstat(path);
  };

  unlink = async (path: string): Promise<void> => {
    this.tick('unlink', path);
    await this.real.unlink(path);
  };

  rmdir = async (path: string): Promise<void> => {
    this.tick('rmdir', path);
    await this.real.rmdir(path);
  };

  rm = async (path: string, options?: { recursive?: boolean; force?: boolean }): Promise<void> => {
    this.tick('rm', path);
    await this.real.rm(path, options);
  };

  readlink = async (path: string): Promise<string> => {
    this.tick('readlink', path);
    return this.real.readlink(path);
  };

  symlink = async (target: string, path: string): Promise<void> => {
    this.tick('symlink', path);
    await this.real.symlink(target, path);
  };

  private wrapHandle(handle: FileHandle, path: string): FileHandleLike {
    return {
      write: async (data: Uint8Array | string) => {
        this.tick('handle.write', path);
        return typeof data === 'string' ? handle.write(data) : handle.write(data);
      },
      chmod: async (mode: number) => {
        this.tick('handle.chmod', path);
        await handle.chmod(mode);
      },
      sync: async () => {
        this.tick('handle.sync', path);
        await handle.sync();
      },
      read: async (buffer: Uint8Array, offset: number, length: number, position: number) => {
        this.tick('handle.read', path);
        return handle.read(buffer, offset, length, position);
      },
      stat: async () => {
        this.tick('handle.stat', path);
        return handle.stat();
      },
      close: async () => {
        try {
          this.tick('handle.close', path);
        } catch (err) {
          await handle.close().catch(() => undefined);
          throw err;
        }
        await handle.close();
      },
    };
  }
}
