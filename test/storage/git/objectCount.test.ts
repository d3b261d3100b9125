import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { promises as nodeFs } from 'node:fs';
import { join } from 'node:path';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { countLooseAndPacked, packIndexPaths } from '../../../src/storage/git/objectCount.js';
import { git as cgit, hostGit } from '../../support/git.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * The counts the repack schedule takes at each opening, read in-process instead of by spawning
 * `git count-objects`: C git's own counts are the judge, whatever else lies in objects/.
 */

const FS = nodeFs as unknown as FsPromises;

describe('storage/objectCount: loose objects and packs counted as git counts them', () => {
  let gitdir: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => {
    let dir: string;
    ({ dir, cleanup } = await tmpDir('objcount'));
    gitdir = join(dir, 'repo.git');
    await cgit(['init', '--bare', '-q', gitdir]);
  });
  afterEach(() => cleanup());

  /** Writes `n` loose blobs through C git. */
  async function looseBlobs(n: number, tag: string): Promise<void> {
    for (let i = 0; i < n; i++) {
      const file = join(gitdir, `../blob-${tag}-${i}`);
      await nodeFs.writeFile(file, `${tag} ${i}\n`);
      await cgit(['--git-dir', gitdir, 'hash-object', '-w', file]);
    }
  }

  async function agreesWithGit(): Promise<{ loose: number; packs: number }> {
    const ours = await countLooseAndPacked(FS, gitdir);
    const theirs = await hostGit.countObjects(gitdir);
    expect(ours).to.deep.equal({ loose: theirs.loose, packs: theirs.packs });
    return ours;
  }

  it('counts nothing in a fresh repository, and nothing when objects/ is missing', async () => {
    expect(await agreesWithGit()).to.deep.equal({ loose: 0, packs: 0 });
    expect(await countLooseAndPacked(FS, join(gitdir, 'no-such-repo.git'))).to.deep.equal({ loose: 0, packs: 0 });
  });

  it('counts loose objects across fan-out folders, and packs, as they come and go', async () => {
    await looseBlobs(12, 'a');
    expect(await agreesWithGit()).to.deep.equal({ loose: 12, packs: 0 });
    // `git repack` packs only what is reachable, and nothing is: pack them all by name.
    const ids = await cgit(['--git-dir', gitdir, 'cat-file', '--batch-all-objects', '--batch-check=%(objectname)']);
    execFileSync('git', ['--git-dir', gitdir, 'pack-objects', '-q', join(gitdir, 'objects/pack/pack')], { input: ids, stdio: ['pipe', 'ignore', 'inherit'] });
    await looseBlobs(3, 'b');
    expect(await agreesWithGit()).to.deep.equal({ loose: 15, packs: 1 });
    await cgit(['--git-dir', gitdir, 'prune-packed']);
    expect(await agreesWithGit()).to.deep.equal({ loose: 3, packs: 1 });
  });

  it('leaves out what git leaves out: temp files, foreign names, an index without its pack, dot-files', async () => {
    await looseBlobs(2, 'c');
    const objects = join(gitdir, 'objects');
    await nodeFs.writeFile(join(objects, 'tmp_obj_abcdef'), 'half-written');
    await nodeFs.mkdir(join(objects, 'ab'), { recursive: true });
    await nodeFs.writeFile(join(objects, 'ab', 'not-an-object'), 'x');
    await nodeFs.writeFile(join(objects, 'ab', `${'0'.repeat(37)}`), 'one character short');
    await nodeFs.mkdir(join(objects, 'zz'), { recursive: true });
    await nodeFs.writeFile(join(objects, 'zz', '0'.repeat(38)), 'not a fan-out folder');
    await nodeFs.writeFile(join(objects, 'pack', `pack-${'1'.repeat(40)}.idx`), 'an index whose pack is gone');
    await nodeFs.writeFile(join(objects, 'pack', '.tmp-123-pack.idx'), 'git writing');
    await nodeFs.writeFile(join(objects, 'pack', '.tmp-123-pack.pack'), 'git writing');
    expect(await agreesWithGit()).to.deep.equal({ loose: 2, packs: 0 });
    // The reader's listing still offers the lone index (it skips it when the pack cannot be opened).
    expect((await packIndexPaths(FS, gitdir)).map((p) => p.slice(p.lastIndexOf('/') + 1))).to.deep.equal([`pack-${'1'.repeat(40)}.idx`]);
  });
});
