import { expect } from 'chai';
import { silentLogger } from '../../src/common/log.js';
import { putItem } from '../../src/domain/items.js';
import { getItem } from '../../src/domain/itemReads.js';
import type { Actor } from '../../src/domain/keys.js';
import { revertChanges } from '../../src/domain/revert.js';
import { KeyStore } from '../../src/storage/keys/keyStore.js';
import type { OrgRepo } from '../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../src/storage/repo/orgStore.js';
import { fsckStrict, hostGit } from '../support/git.js';
import { fs } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';

/**
 * Revert against the write queue: a change queued in the same group commit as the revert is not in
 * the history log yet when the revert decides, so the revert must see it in the queue's own view.
 */
describe('domain/revert in the write queue', function () {
  this.timeout(30_000);

  const admin: Actor = { keyId: 'key_aaaaaaaaaaaaaaaa', keyName: 'Ada Admin', orgId: 'default', role: 'admin' };
  const other: Actor = { keyId: 'key_bbbbbbbbbbbbbbbb', keyName: 'Bo Other', orgId: 'default', role: 'writer' };
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let orgs: OrgStore;
  let repo: OrgRepo;
  let keys: KeyStore;

  before(async () => {
    tmp = await tmpDir('ks-revert');
    orgs = new OrgStore({ fs, dataDir: tmp.dir, logger: silentLogger, git: hostGit, owner: true });
    await orgs.create('default', new Date());
    repo = (await orgs.get('default')) as OrgRepo;
    keys = new KeyStore({ fs, dataDir: tmp.dir, logger: silentLogger });
  });

  after(async () => {
    await orgs?.closeAll();
    await tmp?.cleanup();
  });

  const write = (actor: Actor, path: string, content: string) => putItem({ repo, actor, path, content, maxContentBytes: 1 << 20 });

  it('a change by someone else queued just before the revert, in the same batch, is a conflict, not overwritten', async () => {
    await write(admin, 'q/item.md', 'base\n');
    const { commitId } = await write(admin, 'q/item.md', 'mine\n');
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const blocker = repo.write(async () => {
      await gate;
      return null;
    });
    const theirs = write(other, 'q/item.md', 'theirs\n');
    const undo = revertChanges({ repo, actor: admin, keys, target: { commitId: commitId as string } });
    // Both wait behind the blocker: the revert has read history (without their change) and queued.
    while (repo.queuedWrites < 2) await new Promise((r) => setTimeout(r, 5));
    open();
    await blocker;
    await theirs;
    const result = await undo;
    expect(result.commitId).to.equal(null);
    expect(result.conflicts.map((c) => [c.path, c.why])).to.deep.equal([['q/item.md', 'changed after the reverted change']]);
    expect((await getItem({ repo, actor: admin, path: 'q/item.md' })).content).to.equal('theirs\n');
    await fsckStrict(orgs.gitdirOf('default'));
  });
});
