import { expect } from 'chai';
import { silentLogger } from '../../src/common/log.js';
import { loadCommitChanges, visibleChanges } from '../../src/domain/commitChanges.js';
import { setFolderRule } from '../../src/domain/folders.js';
import { putItem } from '../../src/domain/items.js';
import type { Actor } from '../../src/domain/keys.js';
import { moveItem } from '../../src/domain/moves.js';
import type { OrgRepo } from '../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../src/storage/repo/orgStore.js';
import { hostGit } from '../support/git.js';
import { fs } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';

const ADMIN: Actor = { keyId: 'key_admin', keyName: 'admin', orgId: 'acme', role: 'admin' };
const READER: Actor = { keyId: 'key_reader', keyName: 'reader', orgId: 'acme', role: 'reader' };

/**
 * A commit's facts (what events and webhooks tell of it) are the change feed of the commit while it was the head,
 * even when the next commit, a folder rule, is published while the facts are being read: the rules of the time
 * are taken before the reads, not after (a reader's event of a move into a folder lost the item it moved, once in a
 * CI run, when the next commit shut readers out of that folder).
 */
describe('domain/commitChanges: the facts of a commit', () => {
  it('keep the folder rules of their commit when a folder rule is published while they are read', async () => {
    const { dir, cleanup } = await tmpDir('ks-commit-changes');
    const store = new OrgStore({ fs, dataDir: dir, logger: silentLogger, git: hostGit, owner: true });
    try {
      await store.create('acme', new Date('2026-01-01T00:00:00Z'));
      const repo = (await store.get('acme')) as OrgRepo;
      await putItem({ repo, actor: ADMIN, path: 'feed/b.md', content: 'b', maxContentBytes: 1 << 20 });
      const { commitId } = await moveItem({ repo, actor: ADMIN, from: 'feed/b.md', to: 'moved/b.md' });
      const moved = repo.history.get(commitId);
      if (!moved) throw new Error('no history entry for the move');

      // The records' read is held until the folder rule is published.
      let release: () => void = () => undefined;
      const held = new Promise<void>((resolve) => (release = resolve));
      const readAt = repo.readAt.bind(repo);
      repo.readAt = async (...args: Parameters<OrgRepo['readAt']>) => {
        await held;
        return readAt(...args);
      };
      const reading = loadCommitChanges(repo, moved);
      await setFolderRule({ repo, actor: ADMIN, folder: 'moved', requiredReadPermission: 'knowledge:admin' });
      release();
      const facts = await reading;
      expect(visibleChanges(facts, READER).map((c) => `${c.change} ${c.path}`)).to.deep.equal(['deleted feed/b.md', 'created moved/b.md']);
    } finally {
      await store.closeAll();
      await cleanup();
    }
  });
});
