import git from 'isomorphic-git';
import type { FsPromises } from '../fs/fs.js';
import type { TreeEntry } from '../git/objectFormat.js';
import { TreeEditor } from '../git/treeEditor.js';
import type { CommitFacts } from './historyLog.js';
import { Lru } from './lru.js';

/** Waits before each retry of a failed read (see `fromGit`). */
const READ_RETRY_MS = [0, 10, 50, 200];

/**
 * Reads one repository's objects through isomorphic-git: blobs, commits and
 * trees (the trees through a `TreeEditor`, whose cache the commit builder
 * shares). One isomorphic-git cache per repository, pruned after a repack.
 */
export class ObjectReader {
  /** isomorphic-git's own cache (pack indexes and pack data). */
  private gitCache: object = {};
  private readonly gitFs: { promises: FsPromises };
  private readonly commitTrees = new Lru<string, string>(10_000);
  readonly trees: TreeEditor;

  constructor(
    private readonly fs: FsPromises,
    readonly gitdir: string,
  ) {
    this.gitFs = { promises: hidePackTemporaries(fs) };
    this.trees = new TreeEditor((oid) =>
      this.fromGit(async (cache) => (await git.readTree({ fs: this.gitFs, gitdir, oid, cache })).tree as TreeEntry[]),
    );
  }

  async blobText(oid: string): Promise<string> {
    return (await this.blobBytes(oid)).toString('utf8');
  }

  async blobBytes(oid: string): Promise<Buffer> {
    const { blob } = await this.fromGit((cache) => git.readBlob({ fs: this.gitFs, gitdir: this.gitdir, oid, cache }));
    return Buffer.from(blob.buffer, blob.byteOffset, blob.byteLength);
  }

  async commit(oid: string): Promise<CommitFacts & { tree: string }> {
    const { commit } = await this.fromGit((cache) => git.readCommit({ fs: this.gitFs, gitdir: this.gitdir, oid, cache }));
    this.commitTrees.set(oid, commit.tree);
    return { parent: commit.parent[0] ?? null, message: commit.message, author: commit.author, tree: commit.tree };
  }

  async treeOf(commitId: string): Promise<string> {
    return this.commitTrees.get(commitId) ?? (await this.commit(commitId)).tree;
  }

  /** The blob at `path` in `tree`, or undefined: a file where a folder of the path should be ends the walk, as a missing entry does. */
  async lookup(tree: string, path: string): Promise<string | undefined> {
    const parts = path.split('/');
    let oid = tree;
    for (const [i, part] of parts.entries()) {
      const entry: TreeEntry | undefined = (await this.trees.entries(oid)).find((e) => e.path === part);
      if (!entry || entry.type !== (i === parts.length - 1 ? 'blob' : 'tree')) return undefined;
      oid = entry.oid;
    }
    return oid;
  }

  /**
   * A repack deletes the packs it rolled up, maybe while a read is searching
   * them: a read that fails is tried again with a fresh cache (which lists the
   * packs anew), a few times, a little later each time, since git unlinks the
   * rolled-up packs one by one. Objects never change, so a retry is always
   * safe; a real fault fails every time.
   */
  private async fromGit<T>(read: (cache: object) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await read(this.gitCache);
      } catch (err) {
        if (attempt >= READ_RETRY_MS.length) throw err;
        await new Promise((resolve) => setTimeout(resolve, READ_RETRY_MS[attempt]));
        this.gitCache = {};
      }
    }
  }

  /**
   * After a repack, forgets only the packs that are gone. isomorphic-git keeps a
   * whole pack in memory once read (and checks its SHA-1): starting over with an
   * empty cache would re-read the large packs after every repack, which at
   * 50,000 items is tens of megabytes, several times a second under writes.
   */
  async forgetDeletedPacks(): Promise<void> {
    const cache = this.gitCache as Record<symbol, unknown>;
    const packDir = `${this.gitdir}/objects/pack`;
    const live = new Set((await this.fs.readdir(packDir).catch(() => [] as string[])).map((n) => `${packDir}/${n}`));
    for (const key of Object.getOwnPropertySymbols(cache)) {
      const map = cache[key];
      if (!(map instanceof Map)) continue;
      for (const name of [...map.keys()]) {
        if (typeof name === 'string' && name.includes('/objects/pack/') && !live.has(name)) map.delete(name);
      }
    }
  }
}

/**
 * isomorphic-git takes every `*.idx` in objects/pack for a pack index, including
 * the `.tmp-*` files C git writes while it builds a pack (and leaves behind when
 * interrupted). C git ignores dot-files there; so does the view we give isomorphic-git.
 */
function hidePackTemporaries(fs: FsPromises): FsPromises {
  const view = Object.create(fs) as FsPromises;
  view.readdir = async (path: string) => {
    const names = await fs.readdir(path);
    return path.endsWith('/objects/pack') ? names.filter((n) => !n.startsWith('.')) : names;
  };
  return view;
}
