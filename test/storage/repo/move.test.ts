import { promises as nodeFs } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { OrgRepo } from '../../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../../src/storage/repo/orgStore.js';
import { commitCount, fsckStrict, git, hostGit } from '../../support/git.js';
import { moveToIntent, putIntent } from '../../support/intents.js';
import { rejection } from '../../support/records.js';
import { tmpDir } from '../../support/tmp.js';

/** The `move` mutation on a real disk: one commit that C git reads as a rename, and an index that follows it. */

const fs = nodeFs as unknown as FsPromises;

describe('storage: moving an item', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let gitdir: string;
  let repo: OrgRepo;

  const open = (): Promise<OrgRepo> => OrgRepo.open({ orgId: 'acme', fs, gitdir, logger: silentLogger });

  beforeEach(async () => {
    tmp = await tmpDir('ks-move');
    const orgs = new OrgStore({ git: hostGit, fs, dataDir: tmp.dir, logger: silentLogger });
    await orgs.create('acme', new Date());
    gitdir = orgs.gitdirOf('acme');
    repo = await open();
    await repo.write((v) => putIntent(v, 'a/old.md', '# Old\nsome lines\nof text\n'));
    await repo.write((v) => putIntent(v, 'a/old.md', '# Old\nsome lines\nof text, edited\n'));
    await repo.write((v) => putIntent(v, 'a/other.md', 'stays\n'));
  });

  afterEach(async () => {
    await repo.close();
    await tmp.cleanup();
  });

  it('is one commit: content and record leave the old path and arrive at the new one; fsck is clean', async () => {
    const before = repo.get('a/old.md');
    const commits = await commitCount(gitdir);
    const result = await repo.write((v) => moveToIntent(v, 'a/old.md', 'b/c/new.md'));
    expect(await commitCount(gitdir)).to.equal(commits + 1);
    expect(repo.get('a/old.md')).to.equal(undefined);
    const after = repo.get('b/c/new.md');
    expect(after).to.deep.equal(result.entry);
    expect(after?.blobOid).to.equal(before?.blobOid);
    expect(after?.record.id).to.equal(before?.record.id);
    expect(after?.record.path).to.equal('b/c/new.md');
    const files = (await git(['ls-tree', '-r', '--name-only', 'main'], { gitdir })).trim().split('\n');
    expect(files).to.include.members(['b/c/new.md', '.knowledge/items/b/c/new.md', 'a/other.md']);
    expect(files).to.not.include.members(['a/old.md', '.knowledge/items/a/old.md']);
    expect(JSON.parse(await git(['show', 'main:.knowledge/items/b/c/new.md'], { gitdir })) as { path: string }).to.include({ path: 'b/c/new.md' });
    await fsckStrict(gitdir);
  });

  it('is a rename for C git: git log --follow runs through it to the versions before', async () => {
    await repo.write((v) => moveToIntent(v, 'a/old.md', 'b/new.md'));
    const status = await git(['show', '--name-status', '--format=', '-M', 'main', '--', 'a/old.md', 'b/new.md'], { gitdir });
    expect(status.trim()).to.equal('R100\ta/old.md\tb/new.md');
    const log = await git(['log', '--follow', '--format=%s', '--', 'b/new.md'], { gitdir });
    expect(log.trim().split('\n')).to.deep.equal(['Move a/old.md to b/new.md', 'Update a/old.md', 'Create a/old.md']);
  });

  it('leaves an emptied folder out of the tree', async () => {
    await repo.write((v) => moveToIntent(v, 'a/old.md', 'b/new.md'));
    await repo.write((v) => moveToIntent(v, 'a/other.md', 'b/other.md'));
    const top = await git(['ls-tree', '--name-only', 'main'], { gitdir });
    expect(top.trim().split('\n')).to.not.include('a');
    expect(repo.get('b/other.md')).to.not.equal(undefined);
    await fsckStrict(gitdir);
  });

  it('frees the old path within the same group commit: a create there, queued behind the move, is a new item', async () => {
    const moved = repo.write((v) => moveToIntent(v, 'a/old.md', 'b/new.md'));
    const created = repo.write((v) => putIntent(v, 'a/old.md', 'a new item\n'));
    await Promise.all([moved, created]);
    expect(repo.get('a/old.md')?.record.id).to.not.equal(repo.get('b/new.md')?.record.id);
    expect(await repo.readContent(repo.get('a/old.md') as { blobOid: string })).to.equal('a new item\n');
    await fsckStrict(gitdir);
  });

  it('refuses, committing nothing, a move from a path that holds no item', async () => {
    const commits = await commitCount(gitdir);
    const err = await rejection(repo.write((v) => ({ ...moveToIntent(v, 'a/old.md', 'b/new.md'), from: 'a/none.md' })));
    expect(String(err)).to.match(/no other entry at a\/none\.md/);
    expect(await commitCount(gitdir)).to.equal(commits);
  });

  it('reopens to the same index: from a snapshot of before the move (caught up), of after it, or (none) from the tree', async () => {
    const snapshot = join(gitdir, 'knowledge-index.json');
    await repo.close();
    repo = await open();
    const older = await readFile(snapshot);
    await repo.write((v) => moveToIntent(v, 'a/old.md', 'b/new.md'));
    const moved = repo.get('b/new.md');
    await repo.close();
    await writeFile(snapshot, older);
    repo = await open();
    expect(repo.get('b/new.md')).to.deep.equal(moved);
    expect(repo.get('a/old.md')).to.equal(undefined);
    await repo.close();
    repo = await open();
    expect(repo.get('b/new.md')).to.deep.equal(moved);
    expect(repo.get('a/old.md')).to.equal(undefined);
    await repo.close();
    await rm(snapshot, { force: true });
    await rm(join(gitdir, 'knowledge-history.jsonl'), { force: true });
    repo = await open();
    expect(repo.get('b/new.md')).to.deep.equal(moved);
    expect(repo.get('a/old.md')).to.equal(undefined);
    expect(repo.history.itemHistory(moved?.record.id as string).map((h) => h.item?.action)).to.deep.equal(['create', 'update', 'move']);
  });
});
