import { promises as nodeFs } from 'node:fs';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import type { ItemRecord } from '../../../src/storage/repo/itemRecord.js';
import { OrgRepo, type ItemIntent, type RepoView, type WriteIntent } from '../../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../../src/storage/repo/orgStore.js';
import { fsckStrict, git, hostGit } from '../../support/git.js';
import { tmpDir } from '../../support/tmp.js';
import { textRecord } from '../../support/records.js';

/** What OrgRepo writes on a real disk is judged by C git (`git fsck --strict`), on a real disk rather than memfs. */

const fs = nodeFs as unknown as FsPromises;
const AUTHOR = { name: 'Ada Lovelace (ci)', email: 'key_00112233aabbccdd' };

function intent(view: RepoView, path: string, mutation: ItemIntent['mutation'], content?: string): WriteIntent {
  const current = view.get(path);
  const when = new Date(Date.UTC(2024, 2, 1, 10, 0, 0, 999));
  const base: ItemRecord =
    current?.record ?? textRecord(path, { id: `id-${path}`, when, createdBy: AUTHOR.email, updatedBy: AUTHOR.email });
  const trashed = mutation === 'trash';
  return {
    mutation,
    path,
    record: { ...base, deletedAt: trashed ? when.toISOString() : null, deletedBy: trashed ? AUTHOR.email : null },
    content,
    action: mutation === 'put' ? (current ? 'update' : 'create') : mutation === 'trash' ? 'delete' : mutation,
    summary: `${mutation} ${path}`,
    author: AUTHOR,
    when,
  };
}

describe('storage/orgRepo on disk: git fsck --strict and the trees C git sees', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let gitdir: string;
  let repo: OrgRepo;

  before(async () => {
    tmp = await tmpDir('ks-orgrepo-fsck');
    const orgs = new OrgStore({ git: hostGit, fs, dataDir: tmp.dir, logger: silentLogger });
    await orgs.create('acme', new Date());
    gitdir = orgs.gitdirOf('acme');
    repo = await OrgRepo.open({ orgId: 'acme', fs, gitdir, logger: silentLogger });
    const put = (path: string, content: string): Promise<unknown> => repo.write((v) => intent(v, path, 'put', content));
    await put('docs/guide.md', '# Guide\n');
    await put('a0.md', 'zero');
    await put('a/x.md', 'x');
    await put('a.md', 'a');
    await put('a-b.md', 'ab');
    await put('docs/guide.md', '# Guide, second edition\n');
    await put('old/gone.md', 'gone');
    await repo.write((v) => intent(v, 'old/gone.md', 'trash'));
    await put('purged/p.md', 'p');
    await repo.write((v) => intent(v, 'purged/p.md', 'trash'));
    await repo.write((v) => intent(v, 'purged/p.md', 'purge'));
    // A burst queued together: one group commit of several commits.
    await Promise.all(['burst/1.md', 'burst/2.md', 'burst/3.md'].map((p) => put(p, p)));
  });

  after(async () => {
    await repo.close();
    await tmp.cleanup();
  });

  it('passes git fsck --strict', async () => {
    await fsckStrict(gitdir);
  });

  it('shows the expected root tree in git order with canonical modes', async () => {
    const out = await git(['cat-file', '-p', 'main^{tree}'], { gitdir });
    const rows = out.trim().split('\n').map((line) => {
      const [meta, name] = line.split('\t');
      const [mode, type] = (meta ?? '').split(' ');
      return [mode, type, name];
    });
    expect(rows).to.deep.equal([
      ['040000', 'tree', '.knowledge'],
      ['040000', 'tree', '.trash'],
      ['100644', 'blob', 'a-b.md'],
      ['100644', 'blob', 'a.md'],
      ['040000', 'tree', 'a'],
      ['100644', 'blob', 'a0.md'],
      ['040000', 'tree', 'burst'],
      ['040000', 'tree', 'docs'],
    ]);
    const raw = await git(['cat-file', 'tree', 'main^{tree}'], { gitdir });
    expect(raw).to.include('40000 a\0');
    expect(raw).not.to.include('040000');
  });

  it('lists every file C git finds: content, records, trash, config', async () => {
    const files = (await git(['ls-tree', '-r', '--name-only', 'main'], { gitdir })).trim().split('\n');
    expect(files).to.deep.equal([
      '.knowledge/config.json',
      '.knowledge/items/a-b.md',
      '.knowledge/items/a.md',
      '.knowledge/items/a/x.md',
      '.knowledge/items/a0.md',
      '.knowledge/items/burst/1.md',
      '.knowledge/items/burst/2.md',
      '.knowledge/items/burst/3.md',
      '.knowledge/items/docs/guide.md',
      '.knowledge/items/old/gone.md',
      '.trash/old/gone.md',
      'a-b.md',
      'a.md',
      'a/x.md',
      'a0.md',
      'burst/1.md',
      'burst/2.md',
      'burst/3.md',
      'docs/guide.md',
    ]);
    expect(await git(['cat-file', '-p', 'main:docs/guide.md'], { gitdir })).to.equal('# Guide, second edition\n');
    expect(await git(['cat-file', '-p', 'main:.trash/old/gone.md'], { gitdir })).to.equal('gone');
    const record = JSON.parse(await git(['cat-file', '-p', 'main:.knowledge/items/old/gone.md'], { gitdir })) as ItemRecord;
    expect(record).to.include({ path: 'old/gone.md', deletedBy: AUTHOR.email });
  });

  it('has one commit per change with whole-second author lines, and git log -- <path> finds the item', async () => {
    expect(Number((await git(['rev-list', '--count', 'main'], { gitdir })).trim())).to.equal(15);
    const log = (await git(['log', '--format=%s', '--', 'docs/guide.md'], { gitdir })).trim().split('\n');
    expect(log).to.deep.equal(['put docs/guide.md', 'put docs/guide.md']);
    const head = await git(['cat-file', 'commit', 'main'], { gitdir });
    expect(head).to.match(/^author Ada Lovelace \(ci\) <key_00112233aabbccdd> 1709287200 \+0000$/m);
    expect(head).to.match(/^committer Ada Lovelace \(ci\) <key_00112233aabbccdd> 1709287200 \+0000$/m);
  });

  it('leaves no temporary object files, and packs are read-only and verified by C git', async () => {
    const objects = `${gitdir}/objects`;
    let packs = 0;
    for (const fanout of await nodeFs.readdir(objects)) {
      if (!/^[0-9a-f]{2}$/.test(fanout)) continue;
      for (const name of await nodeFs.readdir(`${objects}/${fanout}`)) {
        expect(name, `${fanout}/${name}`).to.match(/^[0-9a-f]{38}$/);
        expect((await nodeFs.stat(`${objects}/${fanout}/${name}`)).mode & 0o777).to.equal(0o444);
      }
    }
    for (const name of await nodeFs.readdir(`${objects}/pack`)) {
      expect(name).to.match(/^pack-[0-9a-f]{40}\.(pack|idx)$/);
      expect((await nodeFs.stat(`${objects}/pack/${name}`)).mode & 0o777, name).to.equal(0o444);
      if (name.endsWith('.idx')) {
        await git(['verify-pack', `${objects}/pack/${name}`], { gitdir });
        packs++;
      }
    }
    // One pack per group commit: the organization's first commit, and the changes above.
    expect(packs).to.be.greaterThan(5);
    await nodeFs.access(`${gitdir}/refs/heads/main.lock`).then(
      () => expect.fail('a ref lock was left behind'),
      () => undefined,
    );
  });
});
