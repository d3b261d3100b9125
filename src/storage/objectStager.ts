import { randomBytes } from 'node:crypto';
import git, { type PromiseFsClient } from 'isomorphic-git';
import { errnoCode } from '../errors.js';
import { fsyncDir, mapLimit, pathExists } from './durable.js';
import type { FsPromises } from './fs.js';

export interface TreeEntry {
  mode: string;
  path: string;
  oid: string;
  type: 'blob' | 'tree' | 'commit';
}

export interface Signature {
  name: string;
  email: string;
  /** Whole seconds since the epoch (git stores no fractions; fsck --strict checks). */
  timestamp: number;
}

const STAGE = '/stage';
const LOOSE = /^\/stage\/objects\/([0-9a-f]{2})\/([0-9a-f]{38})$/;

/**
 * Collects the objects of one or more commits in memory, then writes them all
 * durably in one flush (design.md, storage rules 1 and 3).
 *
 * isomorphic-git's writeBlob/writeTree/writeCommit do the serialization (tree
 * order, headers) but write loose objects in place and never fsync. So they
 * write into a capturing file system instead, and `flush` lands every object
 * with temp file -> fsync -> rename -> fsync of the directory. Temp files are
 * named `tmp_obj_*`, which `git fsck` ignores and `git gc` cleans.
 */
export class ObjectStager {
  private readonly objects = new Map<string, Uint8Array>();
  private readonly captureFs = { promises: createCaptureFs(this.objects) };

  get size(): number {
    return this.objects.size;
  }

  async writeBlob(content: Uint8Array): Promise<string> {
    return git.writeBlob({ fs: this.captureFs, gitdir: STAGE, blob: content });
  }

  async writeTree(entries: TreeEntry[]): Promise<string> {
    return git.writeTree({ fs: this.captureFs, gitdir: STAGE, tree: entries });
  }

  async writeCommit(args: { tree: string; parents: string[]; author: Signature; message: string }): Promise<string> {
    const signature = { ...args.author, timezoneOffset: 0 };
    return git.writeCommit({
      fs: this.captureFs,
      gitdir: STAGE,
      commit: { tree: args.tree, parent: args.parents, author: signature, committer: signature, message: args.message },
    });
  }

  /** Writes every staged object into `gitdir` durably; objects already there are skipped. Returns how many were written. */
  async flush(fs: FsPromises, gitdir: string): Promise<number> {
    const pending = [...this.objects];
    this.objects.clear();
    const touched = new Set<string>();
    let written = 0;
    let createdFanout = false;
    await mapLimit(pending, 32, async ([oid, deflated]) => {
      const dir = `${gitdir}/objects/${oid.slice(0, 2)}`;
      const final = `${dir}/${oid.slice(2)}`;
      if (await pathExists(fs, final)) return;
      try {
        await fs.mkdir(dir);
        createdFanout = true;
      } catch (err) {
        if (errnoCode(err) !== 'EEXIST') throw err;
      }
      const tmp = `${dir}/tmp_obj_${randomBytes(8).toString('hex')}`;
      const handle = await fs.open(tmp, 'wx', 0o644);
      try {
        try {
          await handle.write(deflated);
          // Read-only, as git leaves its objects (set on the handle: some file systems refuse writes through a 0444 create).
          await handle.chmod(0o444);
          await handle.sync();
        } finally {
          await handle.close();
        }
        await fs.rename(tmp, final);
      } catch (err) {
        // Most likely a full disk: a half-written temp file would only hold on to the space
        // (nothing but `git gc`, weeks later, removes them), so it goes with the failed write.
        await fs.unlink(tmp).catch(() => undefined);
        throw err;
      }
      touched.add(dir);
      written++;
    });
    await mapLimit([...touched], 32, (dir) => fsyncDir(fs, dir));
    if (createdFanout) await fsyncDir(fs, `${gitdir}/objects`);
    return written;
  }

  discard(): void {
    this.objects.clear();
  }
}

/** Just enough of a file system for isomorphic-git's object writers: writes land in the map. */
function createCaptureFs(objects: Map<string, Uint8Array>): PromiseFsClient['promises'] {
  const missing = async (): Promise<never> => {
    throw Object.assign(new Error('ENOENT: staged objects are write-only'), { code: 'ENOENT' });
  };
  return {
    readFile: missing,
    stat: missing,
    lstat: missing,
    readdir: missing,
    readlink: missing,
    symlink: missing,
    unlink: missing,
    rmdir: missing,
    mkdir: async () => undefined,
    writeFile: async (path: unknown, data: unknown) => {
      const match = typeof path === 'string' ? LOOSE.exec(path) : null;
      if (!match || !(data instanceof Uint8Array)) throw new Error(`unexpected staged write to ${String(path)}`);
      objects.set(`${match[1]}${match[2]}`, data);
    },
  };
}
