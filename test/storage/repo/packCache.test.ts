import { expect } from 'chai';
import { promises as nodeFs } from 'node:fs';
import { silentLogger } from '../../../src/common/log.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { OrgRepo } from '../../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../../src/storage/repo/orgStore.js';
import { git, hostGit } from '../../support/git.js';
import { putIntent } from '../../support/intents.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * Reads after a repack: the repack deletes only the small packs it
 * rolled up, so the large pack a read already holds in memory stays there; it
 * is not read from disk again after every repack.
 */
describe('storage/orgRepo: the pack cache across repacks (real disk, C git)', function () {
  this.timeout(60_000);
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let packReads: string[];
  const fs = nodeFs as unknown as FsPromises;
  const counting = Object.create(fs) as FsPromises;
  counting.readFile = ((path: string, enc?: 'utf8') => {
    // isomorphic-git probes readFile() with no path to tell a promise API: that must not throw.
    if (typeof path === 'string' && path.endsWith('.pack')) packReads.push(path);
    return enc ? fs.readFile(path, enc) : fs.readFile(path);
  }) as FsPromises['readFile'];

  beforeEach(async () => {
    tmp = await tmpDir('ks-packcache');
    packReads = [];
  });
  afterEach(() => tmp.cleanup());

  it('keeps a surviving pack in memory across a geometric repack, and reads everything back', async () => {
    await new OrgStore({ git: hostGit, fs, dataDir: tmp.dir, logger: silentLogger }).create('acme', new Date());
    const gitdir = `${tmp.dir}/orgs/acme.git`;
    let repo = await OrgRepo.open({ orgId: 'acme', fs: counting, gitdir, logger: silentLogger, git: hostGit });
    const first: Array<{ path: string; commit: string }> = [];
    for (let i = 0; i < 200; i++) {
      const path = `big/item-${i}.md`;
      const r = await repo.write((v) => putIntent(v, path, `${'content '.repeat(50)}${i}`));
      first.push({ path, commit: r.commitId as string });
    }
    await repo.close();
    // One large pack of everything so far, as a full gc leaves it.
    await git(['repack', '-a', '-d', '-q'], { gitdir });
    repo = await OrgRepo.open({ orgId: 'acme', fs: counting, gitdir, logger: silentLogger, git: hostGit });
    for (let i = 0; i < 5; i++) await repo.write((v) => putIntent(v, `small/${i}.md`, `small ${i}`));
    const packsBefore = (await nodeFs.readdir(`${gitdir}/objects/pack`)).filter((n) => n.endsWith('.pack'));
    expect(packsBefore).to.have.length(6);
    const read = async (i: number): Promise<string | undefined> => {
      const at = await repo.readAt((first[i] as { commit: string }).commit, (first[i] as { path: string }).path);
      return at ? repo.readContent({ blobOid: at.blobOid }) : undefined;
    };
    expect(await read(3)).to.equal(`${'content '.repeat(50)}3`);
    const sizes = await Promise.all(packsBefore.map(async (n) => ({ n, size: (await nodeFs.stat(`${gitdir}/objects/pack/${n}`)).size })));
    const largest = sizes.sort((a, b) => b.size - a.size)[0]?.n as string;
    const large = packReads.filter((p) => p.endsWith(largest));
    expect(large.length, 'the large pack was read once').to.equal(1);

    const report = await repo.repack();
    const after = await nodeFs.readdir(`${gitdir}/objects/pack`);
    expect(after.some((n) => (large[0] as string).endsWith(n)), `the large pack survives the geometric repack: ${JSON.stringify(report)} ${after.join(' ')}`).to.equal(true);
    const readsBefore = packReads.length;
    for (const i of [7, 99, 150]) expect(await read(i)).to.equal(`${'content '.repeat(50)}${i}`);
    expect(packReads.slice(readsBefore).filter((p) => p === large[0]), 'large pack reads after the repack').to.deep.equal([]);
    // The small packs were folded into one: what they held still reads.
    for (let i = 0; i < 5; i++) expect(await repo.readContent({ blobOid: (repo.get(`small/${i}.md`) as { blobOid: string }).blobOid })).to.match(/^small/);
    await repo.close();
  });
});
