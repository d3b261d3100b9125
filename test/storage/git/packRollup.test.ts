import { expect } from 'chai';
import { promises as nodeFs } from 'node:fs';
import { join } from 'node:path';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { ObjectDatabase } from '../../../src/storage/git/objectDatabase.js';
import { ObjectStager } from '../../../src/storage/git/objectStager.js';
import { geometricRollup, rollUpPacks, type PackWeight } from '../../../src/storage/git/packRollup.js';
import { TreeEditor } from '../../../src/storage/git/treeEditor.js';
import { git as cgit, fsckStrict, hostGit } from '../../support/git.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * The automatic repack's roll-up (issue 17): the packs `git repack --geometric=2` would fold, folded
 * by `git pack-objects` from their exact object list and the folders of the trees we wrote. C git is
 * the judge: the same packs chosen as its own geometric repack chooses, `fsck --strict` clean, every
 * object still there, and the versions of a folder's tree stored as deltas of each other.
 */

const FS = nodeFs as unknown as FsPromises;
const AUTHOR = { name: 'T', email: 't@example.com', timestamp: 1_700_000_000 };

describe('storage/packRollup: small packs folded by git pack-objects', () => {
  let dir: string;
  let gitdir: string;
  let packDir: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => {
    ({ dir, cleanup } = await tmpDir('rollup'));
    gitdir = join(dir, 'repo.git');
    packDir = join(gitdir, 'objects/pack');
    await cgit(['init', '--bare', '-q', gitdir]);
  });
  afterEach(() => cleanup());

  const packNames = async (at = packDir): Promise<string[]> =>
    (await nodeFs.readdir(at).catch(() => [] as string[])).filter((n) => n.endsWith('.pack')).map((n) => n.slice(0, -'.pack'.length)).sort();

  /** Flushes `stager` as one pack; returns it (path without extension), its object count and the trees' names. */
  async function flushPack(stager: ObjectStager): Promise<PackWeight & { names: ReadonlyMap<string, string> }> {
    const before = new Set(await packNames());
    const objects = stager.size;
    const { names } = await stager.flush(FS, gitdir);
    const made = (await packNames()).filter((n) => !before.has(n));
    expect(made).to.have.length(1);
    return { path: join(packDir, made[0] as string), objects, names };
  }

  /** `verify-pack -v` of a pack: each object's type and delta depth (0: whole), by id. */
  async function contents(path: string): Promise<Map<string, { type: string; depth: number; size: number }>> {
    const out = new Map<string, { type: string; depth: number; size: number }>();
    for (const line of (await cgit(['verify-pack', '-v', `${path}.idx`])).split('\n')) {
      const m = /^([0-9a-f]{40}) (\w+)\s+(\d+) \d+ \d+(?: (\d+) [0-9a-f]{40})?$/.exec(line);
      if (m) out.set(m[1] as string, { type: m[2] as string, size: Number(m[3]), depth: m[4] ? Number(m[4]) : 0 });
    }
    return out;
  }

  for (const sizes of [
    [500, 5, 5, 5, 5],
    [1, 2, 4, 8, 16, 32],
    [200, 60, 30, 30, 3],
    [100, 40, 30, 30],
    [64, 40, 9, 9, 9, 9, 9],
    [1000, 100, 10, 10],
    [100, 49, 20],
    [50, 24, 12],
  ]) {
    it(`chooses the packs git's own geometric repack folds: packs of ${sizes.join(', ')} objects`, async () => {
      const packs: PackWeight[] = [];
      for (const [p, n] of sizes.entries()) {
        const stager = new ObjectStager();
        for (let i = 0; i < n; i++) stager.writeBlob(Buffer.from(`pack ${p} blob ${i}\n`));
        packs.push(await flushPack(stager));
      }
      const ours = geometricRollup(packs).map((p) => p.path.slice(packDir.length + 1)).sort();
      await cgit(['--git-dir', gitdir, 'repack', '-d', '-q', '--geometric=2']);
      const left = new Set(await packNames());
      const gone = packs.map((p) => p.path.slice(packDir.length + 1)).filter((n) => !left.has(n)).sort();
      expect(ours).to.deep.equal(gone);
    });
  }

  it('folds the small packs into one: fsck --strict clean, every object kept, a folder’s versions stored as deltas of each other', async () => {
    const editor = new TreeEditor(() => Promise.reject(new Error('every tree is in the editor')));
    // A first commit of two folders of 300 files (one pack), then 24 commits of one changed file each (one pack each).
    const first = new ObjectStager();
    const files = Array.from({ length: 600 }, (_, i) => ({ path: `docs/f${i % 2}/item-${String(i).padStart(4, '0')}.md`, oid: first.writeBlob(Buffer.from(`item ${i}\n`)) }));
    let root = await editor.apply(null, files, first);
    let head = first.writeCommit({ tree: root, parents: [], author: AUTHOR, message: 'first' });
    const big = await flushPack(first);
    const names = new Map<string, string>();
    const small: string[] = [];
    const ids = new Set<string>();
    for (let n = 0; n < 24; n++) {
      const stager = new ObjectStager();
      const path = `docs/f${n % 2}/item-${String((n * 37) % 600).padStart(4, '0')}.md`;
      root = await editor.apply(root, [{ path, oid: stager.writeBlob(Buffer.from(`version ${n}\n`)) }], stager);
      head = stager.writeCommit({ tree: root, parents: [head], author: { ...AUTHOR, timestamp: AUTHOR.timestamp + n + 1 }, message: `change ${n}` });
      const pack = await flushPack(stager);
      small.push(pack.path);
      pack.names.forEach((name, oid) => names.set(oid, name));
      for (const id of (await contents(pack.path)).keys()) ids.add(id);
    }
    // Each commit's trees are named by their folders: the root, docs, and the folder changed.
    expect(new Set(names.values())).to.deep.equal(new Set(['', 'docs', 'docs/f0', 'docs/f1']));
    await cgit(['--git-dir', gitdir, 'update-ref', 'refs/heads/main', head]);

    const report = await rollUpPacks({ fs: FS, gitdir, git: hostGit, names });
    expect(report).to.include({ listed: 25, packs: 24, objects: ids.size, named: 24 * 3 });
    const left = await packNames();
    expect(left).to.deep.equal([big.path, join(packDir, `pack-${report?.pack}`)].map((p) => p.slice(packDir.length + 1)).sort());
    for (const path of small) expect(await nodeFs.readdir(packDir)).not.to.include(`${path.slice(packDir.length + 1)}.idx`);
    await fsckStrict(gitdir);
    // Every object of the folded packs is in the new one, and our reader finds each.
    const rolled = await contents(join(packDir, `pack-${report?.pack}`));
    expect([...ids].filter((id) => !rolled.has(id))).to.deep.equal([]);
    const db = new ObjectDatabase(FS, gitdir);
    for (const id of ids) expect((await db.read(id)).type).to.be.oneOf(['blob', 'tree', 'commit']);
    db.close();
    // The 300-entry folder trees: after the first version of each folder (its base is in the large
    // pack, which a roll-up leaves alone), nearly every version is a delta of another (git's delta
    // search runs in threads, each on its own share of the list: at a share's edge a version may miss
    // its base). Without the names, 6 to 10 of the 24 were whole.
    const folders = [...rolled].filter(([id, o]) => o.type === 'tree' && names.get(id)?.startsWith('docs/f'));
    expect(folders).to.have.length(24);
    expect(folders.filter(([, o]) => o.depth === 0).length, 'whole folder trees').to.be.at.most(4);
  });

  it('makes objects/pack durable (the new pack’s names) before it removes any old pack', async () => {
    for (let n = 0; n < 3; n++) {
      const stager = new ObjectStager();
      stager.writeBlob(Buffer.from(`blob ${n}\n`));
      await flushPack(stager);
    }
    const calls: string[] = [];
    const recording = new Proxy(FS, {
      get(target, prop: keyof FsPromises) {
        if (prop === 'unlink') return (path: string) => (calls.push(`unlink ${path.slice(packDir.length + 1)}`), target.unlink(path));
        if (prop === 'open')
          return async (path: string, flags: string) => {
            const handle = await target.open(path, flags);
            return Object.assign(Object.create(handle) as typeof handle, { sync: () => (calls.push(`sync ${path}`), handle.sync()), close: () => handle.close() });
          };
        return target[prop];
      },
    });
    const report = await rollUpPacks({ fs: recording, gitdir, git: hostGit, names: new Map() });
    expect(report).to.include({ packs: 3 });
    const firstUnlink = calls.findIndex((c) => c.startsWith('unlink'));
    expect(firstUnlink, 'old packs removed').to.be.above(0);
    expect(calls.slice(0, firstUnlink)).to.include(`sync ${packDir}`);
  });

  it('leaves the packs alone when there is nothing to fold', async () => {
    const stager = new ObjectStager();
    stager.writeBlob(Buffer.from('only\n'));
    const only = await flushPack(stager);
    expect(await rollUpPacks({ fs: FS, gitdir, git: hostGit, names: new Map() })).to.equal(null);
    expect(await packNames()).to.deep.equal([only.path.slice(packDir.length + 1)]);
  });
});
