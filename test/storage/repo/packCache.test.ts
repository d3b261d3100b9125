import { createHash } from 'node:crypto';
import { expect } from 'chai';
import { promises as nodeFs } from 'node:fs';
import { silentLogger } from '../../../src/common/log.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { OrgRepo } from '../../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../../src/storage/repo/orgStore.js';
import { git, hostGit } from '../../support/git.js';
import { putIntent } from '../../support/intents.js';
import { PackReads } from '../../support/packReads.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * Reads after a repack: the repack deletes only the small packs it rolled up,
 * so the large pack a read already has open stays open; it is not opened
 * again after every repack. And a pack is read at its objects' offsets:
 * reading a few items reads a small part of the large pack, never all of it.
 */
/** 8 KB that do not compress much (hex of a hash chain), different for each item: 200 of them make a pack of several windows. */
function content(i: number): string {
  let block = createHash('sha256').update(String(i)).digest('hex');
  const parts: string[] = [];
  for (let k = 0; k < 128; k++) parts.push((block = createHash('sha256').update(block).digest('hex')));
  return `item ${i}\n${parts.join('')}`;
}

describe('storage/orgRepo: the pack cache across repacks (real disk, C git)', function () {
  this.timeout(60_000);
  let tmp: { dir: string; cleanup: () => Promise<void> };
  const fs = nodeFs as unknown as FsPromises;
  const packReads = new PackReads();
  const counting = packReads.view(fs);

  beforeEach(async () => {
    tmp = await tmpDir('ks-packcache');
    packReads.clear();
  });
  afterEach(() => tmp.cleanup());

  it('keeps a surviving pack open across a geometric repack, and reads everything back', async () => {
    await new OrgStore({ git: hostGit, fs, dataDir: tmp.dir, logger: silentLogger }).create('acme', new Date());
    const gitdir = `${tmp.dir}/orgs/acme.git`;
    let repo = await OrgRepo.open({ orgId: 'acme', fs: counting, gitdir, logger: silentLogger, git: hostGit });
    const first: Array<{ path: string; commit: string }> = [];
    for (let i = 0; i < 200; i++) {
      const path = `big/item-${i}.md`;
      const r = await repo.write((v) => putIntent(v, path, content(i)));
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
    expect(await read(3)).to.equal(content(3));
    const sizes = await Promise.all(packsBefore.map(async (n) => ({ n, size: (await nodeFs.stat(`${gitdir}/objects/pack/${n}`)).size })));
    const largest = sizes.sort((a, b) => b.size - a.size)[0]?.n as string;
    const largePath = `${gitdir}/objects/pack/${largest}`;
    expect(packReads.opens.get(largePath), 'the large pack was opened once').to.equal(1);
    const largeSize = (sizes[0] as { size: number }).size;
    const readOfLarge = packReads.objectReads.get(largePath)?.bytes ?? 0;
    expect(readOfLarge, 'bytes read of the large pack for one item').to.be.greaterThan(0).and.lessThan(largeSize / 3);

    const report = await repo.repack();
    const after = await nodeFs.readdir(`${gitdir}/objects/pack`);
    expect(after, `the large pack survives the geometric repack: ${JSON.stringify(report)} ${after.join(' ')}`).to.include(largest);
    for (const i of [7, 99, 150]) expect(await read(i)).to.equal(content(i));
    expect(packReads.opens.get(largePath), 'large pack opens after the repack').to.equal(1);
    // The small packs were folded into one: what they held still reads.
    for (let i = 0; i < 5; i++) expect(await repo.readContent({ blobOid: (repo.get(`small/${i}.md`) as { blobOid: string }).blobOid })).to.match(/^small/);
    await repo.close();
  });
});
