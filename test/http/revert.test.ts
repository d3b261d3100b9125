import { expect } from 'chai';
import { fsckStrict, git } from '../support/git.js';
import { api, type TestServer } from '../support/server.js';
import { COMMIT, head, keyWithId, urlOf, versions } from './adminApi.js';
import { FILES, upload } from './fileHelpers.js';
import { del, get, itemOf, put, type Item } from './helpers.js';
import { closeChecked, content, lastMessage, ok, reverted, startRevertServer, wrote, type Conflict } from './revertApi.js';

/** POST /revert: one new commit undoing one commit, or a key's changes since a time; conflicts reported, not overwritten. */

describe('HTTP revert: POST /revert', function () {
  this.timeout(120_000);

  let server: TestServer;
  let admin: string;
  let other: { secret: string; id: string; name: string };

  before(async () => ({ server, admin, other } = await startRevertServer()));
  after(() => closeChecked(server));

  describe('of one commit', () => {
    it('of an update: content and permissions come back, in one new commit that git log shows', async () => {
      await ok(put(server, admin, 'r/update.md', { content: 'one\n' }));
      const before = itemOf(await get(server, admin, 'r/update.md'));
      const target = await wrote(server, put(server, admin, 'r/update.md', { content: 'two\n', requiredReadPermission: 'knowledge:admin' }));
      const res = await reverted(server, admin, { commitId: target });
      expect(res.commitId).to.match(COMMIT);
      expect(res.commitId).to.equal(await head(server));
      expect(res.reverted).to.deep.equal(['r/update.md']);
      expect(res.conflicts).to.deep.equal([]);
      const after = itemOf(await get(server, admin, 'r/update.md'));
      expect(after.content).to.equal('one\n');
      expect(after.requiredReadPermission).to.equal(before.requiredReadPermission);
      expect(after.id).to.equal(before.id);
      const message = await lastMessage(server);
      expect(message).to.match(/^Revert "Update r\/update.md"/);
      expect(message).to.include(`This reverts commit ${target}.`);
      expect((await git(['log', '--format=%H', '-2', 'main'], { gitdir: server.gitdir() })).split('\n')[1]).to.equal(target);
      expect((await versions(server, admin, 'r/update.md'))[0]?.action).to.equal('update');
    });

    it('of a create: the item goes to the trash, where it can be restored', async () => {
      const target = await wrote(server, put(server, admin, 'r/created.md', { content: 'new\n' }));
      const res = await reverted(server, admin, { commitId: target });
      expect(res.reverted).to.deep.equal(['r/created.md']);
      expect(await content(server, admin, 'r/created.md')).to.equal(undefined);
      const trash = (await ok(api(urlOf(server, '/trash'), { key: admin }))).body?.data?.items as Item[];
      expect(trash.map((i) => i.path)).to.include('r/created.md');
      await ok(api(urlOf(server, '/trash/restore'), { method: 'POST', key: admin, body: { path: 'r/created.md' } }));
      expect(await content(server, admin, 'r/created.md')).to.equal('new\n');
    });

    it('of a delete: the item is back with its content, id and history', async () => {
      const created = itemOf(await put(server, admin, 'r/deleted.md', { content: 'keep me\n' }));
      const target = await wrote(server, del(server, admin, 'r/deleted.md'));
      await reverted(server, admin, { commitId: target });
      const back = itemOf(await get(server, admin, 'r/deleted.md'));
      expect(back.content).to.equal('keep me\n');
      expect(back.id).to.equal(created.id);
      expect((await versions(server, admin, 'r/deleted.md')).map((v) => v.action)).to.deep.equal(['restore', 'delete', 'create']);
    });

    it('of a move: the item moves back, same id', async () => {
      const created = itemOf(await put(server, admin, 'r/here.md', { content: 'moving\n' }));
      const target = await wrote(server, api(urlOf(server, '/move'), { method: 'POST', key: admin, body: { from: 'r/here.md', to: 'r/there.md' } }));
      const res = await reverted(server, admin, { commitId: target });
      expect(res.reverted).to.deep.equal(['r/here.md']);
      expect(await content(server, admin, 'r/there.md')).to.equal(undefined);
      const back = itemOf(await get(server, admin, 'r/here.md'));
      expect([back.id, back.content]).to.deep.equal([created.id, 'moving\n']);
      expect((await versions(server, admin, 'r/here.md'))[0]?.action).to.equal('move');
    });

    it('of a rollback: the content from before the rollback comes back', async () => {
      await ok(put(server, admin, 'r/rolled.md', { content: 'v1\n' }));
      await ok(put(server, admin, 'r/rolled.md', { content: 'v2\n' }));
      const target = await wrote(server, api(urlOf(server, '/rollback'), { method: 'POST', key: admin, body: { path: 'r/rolled.md', version: 1 } }));
      expect(await content(server, admin, 'r/rolled.md')).to.equal('v1\n');
      await reverted(server, admin, { commitId: target });
      expect(await content(server, admin, 'r/rolled.md')).to.equal('v2\n');
    });

    it('of a POST /commits commit: every operation undone, in one commit', async () => {
      await ok(put(server, admin, 'm/a.md', { content: 'a\n' }));
      await ok(put(server, admin, 'm/b.md', { content: 'b\n' }));
      await ok(put(server, admin, 'm/c.md', { content: 'c\n' }));
      const operations = [
        { op: 'put', path: 'm/a.md', content: 'a changed\n' },
        { op: 'delete', path: 'm/b.md' },
        { op: 'move', from: 'm/c.md', to: 'm/c2.md' },
        { op: 'put', path: 'm/new.md', content: 'new\n' },
      ];
      const target = await wrote(server, api(urlOf(server, '/commits'), { method: 'POST', key: admin, body: { operations } }));
      const before = Number((await git(['rev-list', '--count', 'main'], { gitdir: server.gitdir() })).trim());
      const res = await reverted(server, admin, { commitId: target });
      expect(Number((await git(['rev-list', '--count', 'main'], { gitdir: server.gitdir() })).trim())).to.equal(before + 1);
      expect([...res.reverted].sort()).to.deep.equal(['m/a.md', 'm/b.md', 'm/c.md', 'm/new.md']);
      expect(await content(server, admin, 'm/a.md')).to.equal('a\n');
      expect(await content(server, admin, 'm/b.md')).to.equal('b\n');
      expect(await content(server, admin, 'm/c.md')).to.equal('c\n');
      expect(await content(server, admin, 'm/c2.md')).to.equal(undefined);
      expect(await content(server, admin, 'm/new.md')).to.equal(undefined);
      await fsckStrict(server.gitdir());
    });

    it('of a restore: the item goes back to the trash', async () => {
      await ok(put(server, admin, 'r/restored.md', { content: 'in and out\n' }));
      await ok(del(server, admin, 'r/restored.md'));
      const target = await wrote(server, api(urlOf(server, '/trash/restore'), { method: 'POST', key: admin, body: { path: 'r/restored.md' } }));
      await reverted(server, admin, { commitId: target });
      expect(await content(server, admin, 'r/restored.md')).to.equal(undefined);
      expect((await versions(server, admin, 'r/restored.md'))[0]?.action).to.equal('delete');
    });

    it('of a permission change alone: the permissions come back, the content is untouched (action permissions)', async () => {
      await ok(put(server, admin, 'r/perm.md', { content: 'same\n' }));
      const target = await wrote(server, put(server, admin, 'r/perm.md', { content: 'same\n', requiredWritePermission: 'knowledge:admin' }));
      await reverted(server, admin, { commitId: target });
      const item = itemOf(await get(server, admin, 'r/perm.md'));
      expect([item.content, item.requiredWritePermission]).to.deep.equal(['same\n', 'inherit']);
      expect((await versions(server, admin, 'r/perm.md'))[0]?.action).to.equal('permissions');
    });

    it('of a file upload: the earlier bytes, name, type and text come back, byte for byte', async () => {
      const first = Buffer.from('first upload: apples\n');
      const second = Buffer.from('second upload: pears, a longer text\n');
      await ok(upload(server, admin, 'r/file.txt', first, 'text/plain', { 'X-File-Name': 'one.txt' }));
      const target = await wrote(server, upload(server, admin, 'r/file.txt', second, 'text/plain', { 'X-File-Name': 'two.txt' }));
      const res = await reverted(server, admin, { commitId: target });
      expect(res.reverted).to.deep.equal(['r/file.txt']);
      expect(res.conflicts).to.deep.equal([]);
      const item = itemOf(await get(server, admin, 'r/file.txt')) as Item & { fileName: string; fileSize: number };
      expect(item.content).to.equal('first upload: apples\n');
      expect(item.fileName).to.equal('one.txt');
      expect(item.fileSize).to.equal(first.length);
      const download = await fetch(`${server.url}${FILES}/r/file.txt`, { headers: { Authorization: `Bearer ${admin}` } });
      expect(Buffer.from(await download.arrayBuffer()).equals(first)).to.equal(true);
      // Reverting the revert gives the second upload back: the bytes of every version stay stored.
      await reverted(server, admin, { commitId: await head(server) });
      const again = await fetch(`${server.url}${FILES}/r/file.txt`, { headers: { Authorization: `Bearer ${admin}` } });
      expect(Buffer.from(await again.arrayBuffer()).equals(second)).to.equal(true);
    });

    it('of a file upload whose text did not change: the bytes still come back', async () => {
      // Same extracted text, other bytes (a BOM is dropped by extraction): the text blob alone cannot tell them apart.
      const plain = Buffer.from('same words\n');
      const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), plain]);
      await ok(upload(server, admin, 'r/bom.txt', plain, 'text/plain'));
      const target = await wrote(server, upload(server, admin, 'r/bom.txt', withBom, 'text/plain'));
      await reverted(server, admin, { commitId: target });
      const download = await fetch(`${server.url}${FILES}/r/bom.txt`, { headers: { Authorization: `Bearer ${admin}` } });
      expect(Buffer.from(await download.arrayBuffer()).equals(plain)).to.equal(true);
    });

    it('is seen by search and the change feed at once', async () => {
      await ok(put(server, admin, 'r/found.md', { content: 'zanzibar original\n' }));
      const since = await head(server);
      const target = await wrote(server, put(server, admin, 'r/found.md', { content: 'quixotic replacement\n' }));
      const undo = await reverted(server, admin, { commitId: target });
      const search = async (q: string): Promise<string[]> =>
        ((await ok(api(urlOf(server, `/search?q=${q}`), { key: admin }))).body?.data?.results as Array<{ path: string }>).map((r) => r.path);
      expect(await search('zanzibar')).to.deep.equal(['r/found.md']);
      expect(await search('quixotic')).to.deep.equal([]);
      const feed = (await ok(api(urlOf(server, `/changes?since=${since}`), { key: admin }))).body?.data as { head: string; changes: Array<{ path: string; commitId: string }> };
      expect(feed.head).to.equal(undo.commitId);
      expect(feed.changes.map((c) => [c.path, c.commitId])).to.deep.equal([['r/found.md', undo.commitId]]);
    });

    it('two reverts of one commit at once: one commit undoes it, the other finds nothing left to undo', async () => {
      await ok(put(server, admin, 'r/twin.md', { content: 'before\n' }));
      const target = await wrote(server, put(server, admin, 'r/twin.md', { content: 'after\n' }));
      const results = await Promise.all([reverted(server, admin, { commitId: target }), reverted(server, other.secret, { commitId: target })]);
      const made = results.map((r) => r.commitId).filter((c) => c !== null);
      expect(made).to.have.length(1);
      expect(made[0]).to.equal(await head(server));
      expect(results.flatMap((r) => r.conflicts)).to.deep.equal([]);
      expect(await content(server, admin, 'r/twin.md')).to.equal('before\n');
    });

    it('of a revert: the change is back', async () => {
      await ok(put(server, admin, 'r/twice.md', { content: 'first\n' }));
      const target = await wrote(server, put(server, admin, 'r/twice.md', { content: 'second\n' }));
      const undo = await reverted(server, admin, { commitId: target });
      await reverted(server, admin, { commitId: undo.commitId });
      expect(await content(server, admin, 'r/twice.md')).to.equal('second\n');
    });

    it('leaves an item changed after it by someone else alone, reporting it; force takes it back', async () => {
      await ok(put(server, admin, 'r/contested.md', { content: 'base\n' }));
      const target = await wrote(server, put(server, admin, 'r/contested.md', { content: 'mine\n' }));
      const theirs = itemOf(await put(server, other.secret, 'r/contested.md', { content: 'theirs\n' }));
      const etag = (await get(server, admin, 'r/contested.md')).headers.get('etag');
      const before = await head(server);
      const res = await reverted(server, admin, { commitId: target });
      expect(res.commitId).to.equal(null);
      expect(res.reverted).to.deep.equal([]);
      expect(res.conflicts).to.have.length(1);
      const [conflict] = res.conflicts as [Conflict];
      expect(conflict.path).to.equal(theirs.path);
      expect(conflict.why).to.include(`by Olga Other (${other.id})`);
      expect(conflict.current).to.deep.equal({ version: 3, etag });
      expect(await head(server)).to.equal(before);
      expect(await content(server, admin, 'r/contested.md')).to.equal('theirs\n');

      const forced = await reverted(server, admin, { commitId: target, force: true });
      expect(forced.commitId).to.match(COMMIT);
      expect(forced.conflicts).to.deep.equal([]);
      expect(await content(server, admin, 'r/contested.md')).to.equal('base\n');
    });

    it('a move back onto a path taken since is a conflict even with force', async () => {
      await ok(put(server, admin, 'r/spot.md', { content: 'mover\n' }));
      const target = await wrote(server, api(urlOf(server, '/move'), { method: 'POST', key: admin, body: { from: 'r/spot.md', to: 'r/away.md' } }));
      await ok(put(server, other.secret, 'r/spot.md', { content: 'squatter\n' }));
      const res = await reverted(server, admin, { commitId: target, force: true });
      expect(res.commitId).to.equal(null);
      expect(res.conflicts.map((c) => [c.path, c.why])).to.deep.equal([['r/away.md', 'Path conflict: "r/spot.md" is taken']]);
      expect(await content(server, admin, 'r/away.md')).to.equal('mover\n');
    });
  });

  describe("of a key's changes since a time", () => {
    let agent: { secret: string; id: string; name: string };
    let since: string;

    before(async () => {
      await ok(put(server, admin, 'k/notes.md', { content: 'notes v1\n' }));
      await ok(put(server, admin, 'k/plan.md', { content: 'plan v1\n' }));
      await ok(put(server, admin, 'k/old.md', { content: 'old place\n' }));
      agent = await keyWithId(server, 'writer', 'Rogue Agent');
      since = new Date().toISOString();
      await ok(put(server, agent.secret, 'k/notes.md', { content: 'agent scribbles\n' }));
      await ok(put(server, agent.secret, 'k/notes.md', { content: 'more scribbles\n' }));
      await ok(put(server, agent.secret, 'k/junk.md', { content: 'junk\n' }));
      await ok(api(urlOf(server, '/move'), { method: 'POST', key: agent.secret, body: { from: 'k/old.md', to: 'k/new-place.md' } }));
      await ok(put(server, agent.secret, 'k/plan.md', { content: 'agent plan\n' }));
      // Someone else works on the plan after the agent: theirs is not overwritten without force.
      await ok(put(server, other.secret, 'k/plan.md', { content: 'fixed by a human\n' }));
      // And between two of the agent's changes: undoing the agent's would drop the human's in between.
      await ok(put(server, agent.secret, 'k/log.md', { content: 'agent 1\n' }));
      await ok(put(server, other.secret, 'k/log.md', { content: 'human\n' }));
      await ok(put(server, agent.secret, 'k/log.md', { content: 'agent 2\n' }));
    });

    it('undoes every change the key made, in one commit, and reports what others changed since', async () => {
      const res = await reverted(server, admin, { keyId: agent.id, since });
      expect(res.commitId).to.match(COMMIT);
      expect([...res.reverted].sort()).to.deep.equal(['k/junk.md', 'k/notes.md', 'k/old.md']);
      expect(res.conflicts.map((c) => c.path)).to.deep.equal(['k/log.md', 'k/plan.md']);
      expect(res.conflicts.every((c) => c.why.includes('Olga Other')), JSON.stringify(res.conflicts)).to.equal(true);
      expect(await content(server, admin, 'k/log.md')).to.equal('agent 2\n');
      expect(await content(server, admin, 'k/notes.md')).to.equal('notes v1\n');
      expect(await content(server, admin, 'k/junk.md')).to.equal(undefined);
      expect(await content(server, admin, 'k/old.md')).to.equal('old place\n');
      expect(await content(server, admin, 'k/plan.md')).to.equal('fixed by a human\n');
      const message = await lastMessage(server);
      expect(message).to.include(`Revert changes of Rogue Agent (${agent.id}) since`);
      await fsckStrict(server.gitdir());
    });

    it('again: nothing left to undo but the conflict; with force the conflict is taken back too', async () => {
      const again = await reverted(server, admin, { keyId: agent.id, since });
      expect(again.commitId).to.equal(null);
      expect(again.reverted).to.deep.equal([]);
      expect(again.conflicts.map((c) => c.path)).to.deep.equal(['k/log.md', 'k/plan.md']);
      const forced = await reverted(server, admin, { keyId: agent.id, since, force: true });
      expect(forced.reverted).to.deep.equal(['k/log.md', 'k/plan.md']);
      expect(await content(server, admin, 'k/plan.md')).to.equal('plan v1\n');
      expect(await content(server, admin, 'k/log.md')).to.equal(undefined);
    });

    it('"moved a to b, then made a new a": the new a goes to the trash, whose path then holds b back until it is purged', async () => {
      const mover = await keyWithId(server, 'writer', 'Mover');
      await ok(put(server, admin, 'k/a.md', { content: 'the original a\n' }));
      const from = new Date().toISOString();
      await ok(api(urlOf(server, '/move'), { method: 'POST', key: mover.secret, body: { from: 'k/a.md', to: 'k/b.md' } }));
      await ok(put(server, mover.secret, 'k/a.md', { content: 'a new a\n' }));
      const first = await reverted(server, admin, { keyId: mover.id, since: from });
      expect(first.reverted).to.deep.equal(['k/a.md']);
      expect(first.conflicts.map((c) => [c.path, c.why])).to.deep.equal([['k/b.md', 'A deleted item occupies k/a.md']]);
      await ok(api(urlOf(server, '/trash/items/k/a.md'), { method: 'DELETE', key: admin }));
      const second = await reverted(server, admin, { keyId: mover.id, since: from });
      expect(second.reverted).to.deep.equal(['k/a.md']);
      expect(await content(server, admin, 'k/a.md')).to.equal('the original a\n');
    });

    it('a key that changed nothing since: 200, commitId null, nothing reverted', async () => {
      const idle = await keyWithId(server, 'writer', 'Idle');
      const before = await head(server);
      const res = await reverted(server, admin, { keyId: idle.id, since: '2020-01-01' });
      expect(res).to.deep.equal({ commitId: null, reverted: [], conflicts: [] });
      expect(await head(server)).to.equal(before);
    });
  });

});
