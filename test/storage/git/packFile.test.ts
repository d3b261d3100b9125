import { expect } from 'chai';
import { promises as nodeFs } from 'node:fs';
import { join } from 'node:path';
import git from 'isomorphic-git';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { blobObject, commitObject, treeObject, type GitObject } from '../../../src/storage/git/objectFormat.js';
import { ObjectStager } from '../../../src/storage/git/objectStager.js';
import { buildPack } from '../../../src/storage/git/packFile.js';
import { git as cgit } from '../../support/git.js';
import { readObject } from '../../support/gitObjects.js';
import { memoryFs } from '../../support/memfs.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * A group commit lands as one pack. C git is the judge: it must
 * index the pack to the very same bytes as our index, verify it, and fsck a
 * repository made of such packs.
 */

function sampleObjects(count: number): GitObject[] {
  const out: GitObject[] = [blobObject(Buffer.alloc(0))];
  for (let i = 1; i < count; i++) {
    // Sizes around the header's 4- and 11-bit boundaries, and a large one; each object different.
    const size = [15, 16, 127, 2047, 2048, 70_000][i % 6] as number;
    const tag = Buffer.from(`${i}:`);
    out.push(blobObject(Buffer.concat([tag, Buffer.alloc(Math.max(0, size - tag.length), 'x')])));
  }
  return out;
}

describe('storage/packFile', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => {
    ({ dir, cleanup } = await tmpDir('pack'));
  });
  afterEach(() => cleanup());

  it('writes the index git index-pack writes, byte for byte', async () => {
    const built = buildPack(sampleObjects(300));
    await nodeFs.writeFile(join(dir, 'p.pack'), built.pack);
    await cgit(['index-pack', '-o', join(dir, 'git.idx'), join(dir, 'p.pack')]);
    expect(Buffer.compare(await nodeFs.readFile(join(dir, 'git.idx')), built.idx)).to.equal(0);
    await nodeFs.writeFile(join(dir, 'p.idx'), built.idx);
    const verified = await cgit(['verify-pack', '-v', join(dir, 'p.idx')]);
    expect(verified).to.match(/non delta: 300 objects/);
  });

  it('an empty pack is still a valid pack', async () => {
    const built = buildPack([]);
    await nodeFs.writeFile(join(dir, 'e.pack'), built.pack);
    await cgit(['index-pack', '-o', join(dir, 'e.idx'), join(dir, 'e.pack')]);
    expect(Buffer.compare(await nodeFs.readFile(join(dir, 'e.idx')), built.idx)).to.equal(0);
  });

  it('a flush lands one pack that C git, isomorphic-git and a plain reader all read', async () => {
    const gitdir = join(dir, 'repo.git');
    await cgit(['init', '--bare', '-q', gitdir]);
    const stager = new ObjectStager();
    const readme = stager.writeBlob(Buffer.from('# hello\n'));
    const tree = stager.writeTree([{ mode: '100644', path: 'README.md', oid: readme, type: 'blob' }], null, '');
    const commit = stager.writeCommit({ tree, parents: [], author: { name: 'A', email: 'a@x', timestamp: 1_700_000_000 }, message: 'first' });
    const report = await stager.flush(nodeFs as unknown as FsPromises, gitdir);
    // The tree's folder (the root) is reported for the roll-up (packRollup.ts).
    expect(report).to.deep.equal({ objects: 3, packs: 1, names: new Map([[tree, '']]) });
    expect(stager.size).to.equal(0);
    await cgit(['update-ref', 'refs/heads/main', commit], { gitdir });
    await cgit(['fsck', '--strict', '--no-dangling'], { gitdir });
    expect(await cgit(['cat-file', '-p', 'main:README.md'], { gitdir })).to.equal('# hello\n');
    const { blob } = await git.readBlob({ fs: nodeFs, gitdir, oid: readme });
    expect(Buffer.from(blob).toString()).to.equal('# hello\n');
    expect((await readObject(nodeFs as unknown as FsPromises, gitdir, commit)).type).to.equal('commit');
    const names = (await nodeFs.readdir(join(gitdir, 'objects/pack'))).sort();
    expect(names).to.have.length(2);
    expect(names[0]).to.match(/^pack-[0-9a-f]{40}\.idx$/);
    // Nothing staged, nothing written.
    expect(await new ObjectStager().flush(nodeFs as unknown as FsPromises, gitdir)).to.deep.equal({ objects: 0, packs: 0, names: new Map() });
  });

  it('a failed write leaves no temp file and no pack without its index (memfs)', async () => {
    const { fs } = memoryFs();
    await fs.mkdir('/r.git/objects/pack', { recursive: true });
    const failing = Object.create(fs) as FsPromises;
    failing.rename = async (from: string, to: string) => {
      if (to.endsWith('.idx')) throw Object.assign(new Error('ENOSPC: no space left'), { code: 'ENOSPC' });
      return fs.rename(from, to);
    };
    const stager = new ObjectStager();
    stager.writeBlob(Buffer.from('x'));
    let failure: unknown;
    await stager.flush(failing, '/r.git').catch((err: unknown) => (failure = err));
    expect(String(failure)).to.match(/ENOSPC/);
    expect(await fs.readdir('/r.git/objects/pack')).to.deep.equal([]);
  });

  it('writes trees and commits whose ids C git computes the same', async () => {
    const tree = treeObject([{ mode: '040000', path: 'docs', oid: '4b825dc642cb6eb9a060e54bf8d69288fbee4904', type: 'tree' }]);
    const commit = commitObject({ tree: tree.oid, parents: [], author: { name: 'N', email: 'e', timestamp: 1 }, message: 'm\n' });
    for (const o of [tree, commit]) {
      await nodeFs.writeFile(join(dir, o.oid), o.body);
      expect((await cgit(['hash-object', '--literally', '-t', o.type, join(dir, o.oid)])).trim()).to.equal(o.oid);
    }
  });
});
