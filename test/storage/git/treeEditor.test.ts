import { expect } from 'chai';
import git from 'isomorphic-git';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import type { TreeEntry } from '../../../src/storage/git/objectFormat.js';
import { ObjectStager } from '../../../src/storage/git/objectStager.js';
import { EMPTY_TREE, TreeEditor, type TreeChange } from '../../../src/storage/git/treeEditor.js';
import { gitOrder, lookup, readObject, readRawTree } from '../../support/gitObjects.js';
import { memoryFs } from '../../support/memfs.js';

/**
 * The commit builder's tree rewriting, on
 * memfs: only trees on a changed path are written, entries are in git's
 * order, and a folder whose last file leaves disappears.
 */

const GITDIR = '/repo.git';

describe('storage/treeEditor (memfs)', () => {
  let fs: FsPromises;
  let reads: string[];
  const reader = (): ((oid: string) => Promise<TreeEntry[]>) => {
    const cache = {};
    const read = async (oid: string): Promise<TreeEntry[]> =>
      (await git.readTree({ fs: { promises: fs }, gitdir: GITDIR, oid, cache })).tree as TreeEntry[];
    return (oid) => {
      reads.push(oid);
      return read(oid);
    };
  };

  /** Stages and flushes blobs for `files`; returns path -> blob id. */
  async function blobs(files: Record<string, string>): Promise<Record<string, string>> {
    const stager = new ObjectStager();
    const out: Record<string, string> = {};
    for (const [path, text] of Object.entries(files)) out[path] = await stager.writeBlob(Buffer.from(text, 'utf8'));
    await stager.flush(fs, GITDIR);
    return out;
  }

  /** Applies `changes` with `editor` and flushes; returns the new root and how many objects were written. */
  async function apply(editor: TreeEditor, root: string | null, changes: TreeChange[]): Promise<{ root: string; written: number }> {
    const stager = new ObjectStager();
    const next = await editor.apply(root, changes, stager);
    const written = stager.size;
    await stager.flush(fs, GITDIR);
    return { root: next, written };
  }

  const put = (oids: Record<string, string>): TreeChange[] => Object.entries(oids).map(([path, oid]) => ({ path, oid }));

  beforeEach(async () => {
    ({ fs } = memoryFs());
    await git.init({ fs: { promises: fs }, dir: GITDIR, gitdir: GITDIR, bare: true, defaultBranch: 'main' });
    reads = [];
  });

  it('builds nested trees from nothing, with canonical modes', async () => {
    const oids = await blobs({ 'readme.md': 'hi\n', 'docs/guide.md': 'guide\n', 'docs/api/ref.md': 'ref\n' });
    const { root } = await apply(new TreeEditor(reader()), null, put(oids));
    const top = await readRawTree(fs, GITDIR, root);
    expect(top.map((e) => [e.name, e.mode])).to.deep.equal([
      ['docs', '40000'],
      ['readme.md', '100644'],
    ]);
    const docs = await readRawTree(fs, GITDIR, top[0]?.oid as string);
    expect(docs.map((e) => [e.name, e.mode, e.oid])).to.deep.equal([
      ['api', '40000', docs[0]?.oid],
      ['guide.md', '100644', oids['docs/guide.md']],
    ]);
    expect((await lookup(fs, GITDIR, root, 'docs/api/ref.md'))?.oid).to.equal(oids['docs/api/ref.md']);
  });

  it('stores entries in git order: "a-b.md" < "a.md" < "a/" < "a0.md"', async () => {
    const oids = await blobs({ 'a0.md': '1', 'a/x.md': '2', 'a.md': '3', 'a-b.md': '4', 'b.md': '5', 'a_c.md': '6' });
    const { root } = await apply(new TreeEditor(reader()), null, put(oids));
    const names = (await readRawTree(fs, GITDIR, root)).map((e) => e.name);
    expect(names).to.deep.equal(['a-b.md', 'a.md', 'a', 'a0.md', 'a_c.md', 'b.md']);
    expect(gitOrder(await readRawTree(fs, GITDIR, root))).to.deep.equal(names);
  });

  it('keeps git order when a folder is added beside files that sort around it', async () => {
    const editor = new TreeEditor(reader());
    const first = await blobs({ 'foo.md': 'f', 'foo-bar.md': 'fb', 'foo0.md': 'f0' });
    const { root } = await apply(editor, null, put(first));
    const second = await blobs({ 'foo/inner.md': 'i' });
    const { root: next } = await apply(editor, root, put(second));
    const entries = await readRawTree(fs, GITDIR, next);
    expect(entries.map((e) => e.name)).to.deep.equal(['foo-bar.md', 'foo.md', 'foo', 'foo0.md']);
    expect(gitOrder(entries)).to.deep.equal(entries.map((e) => e.name));
  });

  describe('on an existing tree', () => {
    const FILES = {
      'a/b/c/x.md': 'x',
      'a/b/d/y.md': 'y',
      'a/e/z.md': 'z',
      'f/w.md': 'w',
      'top.md': 'top',
    };
    let root: string;

    beforeEach(async () => {
      ({ root } = await apply(new TreeEditor(reader()), null, put(await blobs(FILES))));
      reads = [];
    });

    it('rewrites only the trees on the changed path; sibling subtrees keep their ids', async () => {
      const { 'a/b/c/x.md': changed } = await blobs({ 'a/b/c/x.md': 'x, edited' });
      const editor = new TreeEditor(reader());
      const result = await apply(editor, root, [{ path: 'a/b/c/x.md', oid: changed as string }]);
      // Four trees: the root, a, a/b, a/b/c; and it read only those four.
      expect(result.written).to.equal(4);
      expect(reads).to.have.length(4);
      for (const unchanged of ['f', 'top.md', 'a/e', 'a/b/d']) {
        expect((await lookup(fs, GITDIR, result.root, unchanged))?.oid, unchanged).to.equal((await lookup(fs, GITDIR, root, unchanged))?.oid);
      }
      for (const rewritten of ['a', 'a/b', 'a/b/c']) {
        expect((await lookup(fs, GITDIR, result.root, rewritten))?.oid, rewritten).not.to.equal(
          (await lookup(fs, GITDIR, root, rewritten))?.oid,
        );
      }
      expect((await lookup(fs, GITDIR, result.root, 'a/b/c/x.md'))?.oid).to.equal(changed);
      expect(result.root).not.to.equal(root);
    });

    it('writes a shared folder once for several changes in it', async () => {
      const oids = await blobs({ 'a/e/z.md': 'z2', 'a/e/new.md': 'n' });
      const result = await apply(new TreeEditor(reader()), root, put(oids));
      expect(result.written).to.equal(3); // root, a, a/e
      expect((await readRawTree(fs, GITDIR, (await lookup(fs, GITDIR, result.root, 'a/e'))?.oid as string)).map((e) => e.name)).to.deep.equal([
        'new.md',
        'z.md',
      ]);
    });

    it('returns the same root for a change that changes nothing', async () => {
      const same = await lookup(fs, GITDIR, root, 'a/e/z.md');
      const result = await apply(new TreeEditor(reader()), root, [{ path: 'a/e/z.md', oid: same?.oid as string }]);
      expect(result.root).to.equal(root);
      const missing = await apply(new TreeEditor(reader()), root, [{ path: 'a/e/missing.md', oid: null }]);
      expect(missing.root).to.equal(root);
    });

    it('removes a folder when a delete empties it, and its parent when that empties too', async () => {
      const editor = new TreeEditor(reader());
      const one = await apply(editor, root, [{ path: 'a/e/z.md', oid: null }]);
      expect((await readRawTree(fs, GITDIR, (await lookup(fs, GITDIR, one.root, 'a'))?.oid as string)).map((e) => e.name)).to.deep.equal(['b']);
      const two = await apply(editor, one.root, [
        { path: 'a/b/c/x.md', oid: null },
        { path: 'a/b/d/y.md', oid: null },
      ]);
      expect((await readRawTree(fs, GITDIR, two.root)).map((e) => e.name)).to.deep.equal(['f', 'top.md']);
      expect((await lookup(fs, GITDIR, two.root, 'f'))?.oid).to.equal((await lookup(fs, GITDIR, root, 'f'))?.oid);
    });

    it('gives the empty tree when the last file goes', async () => {
      const result = await apply(
        new TreeEditor(reader()),
        root,
        Object.keys(FILES).map((path) => ({ path, oid: null })),
      );
      expect(result.root).to.equal(EMPTY_TREE);
      expect((await readObject(fs, GITDIR, EMPTY_TREE)).body.length).to.equal(0);
    });

    it('refuses a file where a folder is, and a folder where a file is', async () => {
      const { 'x.md': oid } = await blobs({ 'x.md': 'x' });
      const editor = new TreeEditor(reader());
      let error: unknown;
      await editor.apply(root, [{ path: 'a', oid: oid as string }], new ObjectStager()).catch((e: unknown) => (error = e));
      expect(String(error)).to.match(/cannot place a file at a: it is a folder/);
      error = undefined;
      await editor.apply(root, [{ path: 'top.md/x.md', oid: oid as string }], new ObjectStager()).catch((e: unknown) => (error = e));
      expect(String(error)).to.match(/cannot use top\.md as a folder: it is a file/);
    });

    it('in one apply, turns a removed file into a folder and an emptied folder into a file (one commit of several items)', async () => {
      const { 'n.md': oid } = await blobs({ 'n.md': 'new' });
      const editor = new TreeEditor(reader());
      // top.md leaves, and a folder top.md/ takes its name; a/e/z.md leaves, and a file a/e takes the emptied folder's name.
      const result = await apply(editor, root, [
        { path: 'top.md', oid: null },
        { path: 'top.md/n.md', oid: oid as string },
        { path: 'a/e/z.md', oid: null },
        { path: 'a/e', oid: oid as string },
      ]);
      const top = await readRawTree(fs, GITDIR, result.root);
      expect(top.map((e) => `${e.mode} ${e.name}`)).to.deep.equal(['40000 a', '40000 f', '40000 top.md']);
      const a = await readRawTree(fs, GITDIR, (await lookup(fs, GITDIR, result.root, 'a'))?.oid as string);
      expect(a.map((e) => `${e.mode} ${e.name}`)).to.deep.equal(['40000 b', '100644 e']);
      expect((await lookup(fs, GITDIR, result.root, 'top.md/n.md'))?.oid).to.equal(oid);
    });

    it('in one apply, still refuses to drop what the earlier changes did not empty: a file not removed, a folder with other files', async () => {
      const { 'n.md': oid } = await blobs({ 'n.md': 'new' });
      const editor = new TreeEditor(reader());
      let error: unknown;
      // top.md rewritten (not removed), then a folder top.md/: the file would be lost.
      await editor.apply(root, [{ path: 'top.md', oid: oid as string }, { path: 'top.md/n.md', oid: oid as string }], new ObjectStager()).catch((e: unknown) => (error = e));
      expect(String(error)).to.match(/cannot use top\.md as a folder: it is a file/);
      error = undefined;
      // One file of folder a/ removed, then a file a: the folder's other files would be lost.
      await editor.apply(root, [{ path: 'a/e/z.md', oid: null }, { path: 'a', oid: oid as string }], new ObjectStager()).catch((e: unknown) => (error = e));
      expect(String(error)).to.match(/cannot place a file at a: it is a folder/);
    });

    it('remembers the trees it wrote: a second change to the same folders reads nothing', async () => {
      const editor = new TreeEditor(reader());
      const oids = await blobs({ 'a/b/c/x.md': 'v2', 'a/b/c/x2.md': 'v3' });
      const first = await apply(editor, root, [{ path: 'a/b/c/x.md', oid: oids['a/b/c/x.md'] as string }]);
      const readsAfterFirst = reads.length;
      const second = await apply(editor, first.root, [{ path: 'a/b/c/x2.md', oid: oids['a/b/c/x2.md'] as string }]);
      expect(reads.length).to.equal(readsAfterFirst);
      expect((await lookup(fs, GITDIR, second.root, 'a/b/c/x2.md'))?.oid).to.equal(oids['a/b/c/x2.md']);
      expect((await lookup(fs, GITDIR, second.root, 'a/b/c/x.md'))?.oid).to.equal(oids['a/b/c/x.md']);
    });

    it('keeps the current trees, not the versions they replaced: folders written in turn are never read again', async () => {
      // Room for the current trees of four folders of ten files and the root (4 × 11 + 5 entries), with a
      // little to spare but not for a second version of each: a cache that kept the replaced versions (each
      // made the most recent when read as a base) pushed current folders out, and every change re-read its folder.
      const files: Record<string, string> = {};
      for (let f = 0; f < 4; f++) for (let i = 0; i < 10; i++) files[`f${f}/i${i}.md`] = `${f}-${i}`;
      let head = (await apply(new TreeEditor(reader()), null, put(await blobs(files)))).root;
      const editor = new TreeEditor(reader(), { cacheEntries: 60 });
      const versions = await blobs(Object.fromEntries(Array.from({ length: 24 }, (_, n) => [`v${n}`, `version ${n}`])));
      for (let n = 0; n < 24; n++) {
        if (n === 4) reads = []; // each folder read once, on its first change
        head = (await apply(editor, head, [{ path: `f${n % 4}/i${n % 10}.md`, oid: versions[`v${n}`] as string }])).root;
      }
      expect(reads).to.deep.equal([]);
      expect((await lookup(fs, GITDIR, head, 'f3/i3.md'))?.oid).to.equal(versions['v23']);
    });

    it('keeps a replaced tree that may not be on disk yet: another folder with the same files still finds it', async () => {
      const oids = await blobs({ 'same.md': 'same', 'other.md': 'other' });
      const editor = new TreeEditor(reader());
      // Batch 1, not flushed yet (its pack is being fsynced): folders p/ and q/ get the very same tree.
      const first = new ObjectStager();
      const one = await editor.apply(null, [{ path: 'p/x.md', oid: oids['same.md'] as string }, { path: 'q/x.md', oid: oids['same.md'] as string }], first);
      // Batch 2, built meanwhile: p/ changes (its previous tree is q/'s too), then q/ does.
      const second = new ObjectStager();
      const two = await editor.apply(one, [{ path: 'p/y.md', oid: oids['other.md'] as string }], second);
      const three = await editor.apply(two, [{ path: 'q/z.md', oid: oids['other.md'] as string }], second);
      await first.flush(fs, GITDIR);
      await second.flush(fs, GITDIR);
      expect((await lookup(fs, GITDIR, three, 'q/x.md'))?.oid).to.equal(oids['same.md']);
      expect((await lookup(fs, GITDIR, three, 'q/z.md'))?.oid).to.equal(oids['other.md']);
    });
  });
});
