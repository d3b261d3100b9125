import { CorruptStore } from '../errors.js';
import type { FsPromises } from '../fs/fs.js';
import { ObjectDatabase, type ObjectCaches } from '../git/objectDatabase.js';
import { parseCommit, parseTree, type ParsedCommit } from '../git/objectParse.js';
import type { TreeEntry } from '../git/objectFormat.js';
import { TreeEditor } from '../git/treeEditor.js';
import type { CommitFacts } from './historyLog.js';
import { Lru } from '../../common/lru.js';

/**
 * Reads one repository's objects through our pack reader (`ObjectDatabase`):
 * blobs, commits and trees (the trees through a `TreeEditor`, whose cache the
 * commit builder shares). isomorphic-git is no longer on the read path: it
 * kept a whole pack in memory once it read one object of it.
 */
export class ObjectReader {
  private readonly objects: ObjectDatabase;
  private readonly commitTrees = new Lru<string, string>(10_000);
  readonly trees: TreeEditor;

  constructor(
    fs: FsPromises,
    readonly gitdir: string,
    /** The pack windows and delta bases kept (default: this reader's own). */
    caches?: ObjectCaches,
  ) {
    this.objects = new ObjectDatabase(fs, gitdir, caches);
    this.trees = new TreeEditor(async (oid) => {
      const entries = parseTree(await this.body(oid, 'tree'));
      if (!entries) throw new CorruptStore({ where: `${gitdir} tree ${oid}`, reason: 'not a well-formed tree' });
      return entries as TreeEntry[];
    });
  }

  async blobText(oid: string): Promise<string> {
    return (await this.blobBytes(oid)).toString('utf8');
  }

  blobBytes(oid: string): Promise<Buffer> {
    return this.body(oid, 'blob');
  }

  async commit(oid: string): Promise<CommitFacts & { tree: string }> {
    const commit: ParsedCommit | null = parseCommit(await this.body(oid, 'commit'));
    if (!commit) throw new CorruptStore({ where: `${this.gitdir} commit ${oid}`, reason: 'not a well-formed commit' });
    this.commitTrees.set(oid, commit.tree);
    return { parent: commit.parents[0] ?? null, message: commit.message, author: commit.author, tree: commit.tree };
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

  /** After a repack: the packs it removed are dropped (their descriptors closed); new ones are opened when a read needs them. */
  forgetDeletedPacks(): Promise<void> {
    return this.objects.forgetDeleted();
  }

  /** Closes the packs (the repository is closed). */
  close(): void {
    this.objects.close();
  }

  private async body(oid: string, type: 'blob' | 'tree' | 'commit'): Promise<Buffer> {
    const object = await this.objects.read(oid);
    if (object.type !== type) throw new CorruptStore({ where: `${this.gitdir} object ${oid}`, reason: `a ${object.type}, not a ${type}` });
    return object.body;
  }
}
