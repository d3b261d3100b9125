import { expect } from 'chai';
import { silentLogger } from '../../src/common/log.js';
import { loadCommitChanges, visibleChanges } from '../../src/domain/commitChanges.js';
import { EventFeed } from '../../src/domain/events.js';
import { deleteItem } from '../../src/domain/items.js';
import { restoreItem } from '../../src/domain/trash.js';
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

  it('of a live stream take the record before each change from the index as the batch is staged, not from git, and are what git says', async () => {
    const { dir, cleanup } = await tmpDir('ks-commit-before');
    const store = new OrgStore({ fs, dataDir: dir, logger: silentLogger, git: hostGit, owner: true });
    try {
      await store.create('acme', new Date('2026-01-01T00:00:00Z'));
      const repo = (await store.get('acme')) as OrgRepo;
      const put = (path: string, content: string): Promise<unknown> => putItem({ repo, actor: ADMIN, path, content, maxContentBytes: 1 << 20 });
      // Written before anyone listens: the feed never saw these records.
      for (let i = 0; i < 6; i++) await put(`notes/n${i}.md`, `first ${i}`);
      await setFolderRule({ repo, actor: ADMIN, folder: 'vault', requiredReadPermission: 'knowledge:admin' });
      const feed = new EventFeed();
      const unwatch = feed.watch(repo, () => undefined);
      const cursor = repo.headCommit;
      let reads = 0;
      const readAt = repo.readAt.bind(repo);
      repo.readAt = async (...args: Parameters<OrgRepo['readAt']>) => {
        reads += 1;
        return readAt(...args);
      };
      // Each item changed once after the feed started: updates, a move (into a folder readers may not see), a
      // trash and a restore of items last changed before, some in one batch (group commit) together.
      await put('notes/n0.md', 'second 0');
      await Promise.all([put('notes/n1.md', 'second 1'), put('notes/n2.md', 'second 2'), put('notes/new.md', 'new')]);
      await moveItem({ repo, actor: ADMIN, from: 'notes/n3.md', to: 'vault/n3.md' });
      await deleteItem({ repo, actor: ADMIN, path: 'notes/n4.md' });
      const walked = async (actor: Actor): Promise<string[]> => {
        const out: string[] = [];
        for await (const { json } of feed.walk({ repo, actor, cursor })) out.push(json ?? 'nothing');
        return out;
      };
      const admin = await walked(ADMIN);
      const reader = await walked(READER);
      expect(reads, 'records read back from git for the commits after the feed started').to.equal(0);
      // What git says of each commit, read afresh without anything the feed noted.
      repo.readAt = readAt;
      const fromGit = async (actor: Actor): Promise<string[]> => {
        const out: string[] = [];
        for (const entry of repo.history.after(cursor as string) ?? []) {
          const changes = visibleChanges(await loadCommitChanges(repo, entry), actor);
          out.push(changes.length === 0 ? 'nothing' : JSON.stringify({ organizationId: repo.orgId, commitId: entry.commitId, timestamp: new Date(entry.timestamp * 1000).toISOString(), changes }));
        }
        return out;
      };
      expect(admin).to.deep.equal(await fromGit(ADMIN));
      expect(reader).to.deep.equal(await fromGit(READER));
      expect(admin.map((j) => (JSON.parse(j) as { changes: { change: string; path: string }[] }).changes.map((c) => `${c.change} ${c.path}`).join(', '))).to.deep.equal([
        'updated notes/n0.md',
        'updated notes/n1.md',
        'updated notes/n2.md',
        'created notes/new.md',
        'deleted notes/n3.md, created vault/n3.md',
        'deleted notes/n4.md',
      ]);
      // The restore: its record before is the trashed one, noted when it was staged.
      reads = 0;
      repo.readAt = async (...args: Parameters<OrgRepo['readAt']>) => {
        reads += 1;
        return readAt(...args);
      };
      const beforeRestore = repo.headCommit;
      await restoreItem({ repo, actor: ADMIN, path: 'notes/n4.md' });
      const restored: string[] = [];
      for await (const { json } of feed.walk({ repo, actor: ADMIN, cursor: beforeRestore })) restored.push(json ?? 'nothing');
      expect(reads, 'records read back from git for the restore').to.equal(0);
      repo.readAt = readAt;
      const entry = repo.history.get(repo.headCommit as string);
      if (!entry) throw new Error('no history entry for the restore');
      expect(restored).to.deep.equal([JSON.stringify({ organizationId: repo.orgId, commitId: entry.commitId, timestamp: new Date(entry.timestamp * 1000).toISOString(), changes: visibleChanges(await loadCommitChanges(repo, entry), ADMIN) })]);
      unwatch();
    } finally {
      await store.closeAll();
      await cleanup();
    }
  });
});
