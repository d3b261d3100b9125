import { expect } from 'chai';
import { commitCount, fsckStrict, git } from '../support/git.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { sleep } from '../support/sleep.js';
import { del, expectError, expectTextItem, get, itemOf, MSG, put } from './helpers.js';

describe('HTTP PUT /api/v1/knowledge/items/{path}', () => {
  let server: TestServer;
  let admin: string;
  let writer: string;
  let reader: string;

  /** The last commit's message, without the store's own `Key: value` trailers (Item-Id etc.). */
  const lastMessage = async (): Promise<string> => {
    const full = (await git(['log', '-1', '--format=%B', 'main'], { gitdir: server.gitdir() })).replace(/\n+$/, '');
    const paragraphs = full.split('\n\n');
    const last = paragraphs[paragraphs.length - 1] ?? '';
    const isTrailers = paragraphs.length > 1 && last.split('\n').every((line) => /^[A-Za-z][A-Za-z0-9-]*: /.test(line));
    return isTrailers ? paragraphs.slice(0, -1).join('\n\n') : full;
  };

  before(async () => {
    server = await startTestServer();
    admin = server.adminKey;
    writer = await server.key('writer');
    reader = await server.key('reader');
  });
  after(() => server?.close());

  describe('create', () => {
    it('200 with the created item: every field, text item, file fields null, UUID id, ISO timestamps', async () => {
      const before = await commitCount(server.gitdir());
      const res = await put(server, writer, 'docs/guide.md', { content: '# Guide\n' });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const item = itemOf(res);
      expectTextItem(item, { orgId: 'default', path: 'docs/guide.md', content: '# Guide\n' });
      expect(item.requiredReadPermission).to.equal('inherit');
      expect(item.requiredWritePermission).to.equal('inherit');
      expect(Date.parse(item.updatedAt)).to.be.at.least(Date.parse(item.createdAt));
      expect(Math.abs(Date.parse(item.createdAt) - Date.now())).to.be.below(60_000);
      expect(await commitCount(server.gitdir())).to.equal(before + 1);
    });

    it('the created item is what GET returns', async () => {
      const created = itemOf(await put(server, writer, 'docs/created.md', { content: 'hello' }));
      const fetched = await get(server, reader, 'docs/created.md');
      expect(fetched.status).to.equal(200);
      expect(itemOf(fetched)).to.deep.equal(created);
    });

    it('keeps content byte for byte (unicode, newlines, JSON text, empty lines)', async () => {
      const content = 'Grüße 👋 — 日本語\r\n\n{"a": [1, 2]}\n\ttab\n';
      const res = await put(server, writer, 'docs/unicode.md', { content });
      expect(res.status).to.equal(200);
      expect(itemOf(res).content).to.equal(content);
      expect(itemOf(await get(server, reader, 'docs/unicode.md')).content).to.equal(content);
    });

    it('the organization id is the key’s organization', async () => {
      const acme = await server.org('acme');
      const res = await put(server, acme, 'docs/guide.md', { content: 'acme' });
      expect(res.status).to.equal(200);
      expectTextItem(itemOf(res), { orgId: 'acme', path: 'docs/guide.md', content: 'acme' });
    });

    it('accepts Content-Type application/json with a charset', async () => {
      const res = await put(server, writer, 'docs/charset.md', { content: 'c' }, { 'Content-Type': 'application/json; charset=utf-8' });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(itemOf(res).content).to.equal('c');
    });
  });

  describe('update', () => {
    it('200 with the same id and createdAt, the new content and a later updatedAt; one commit', async () => {
      const created = itemOf(await put(server, writer, 'upd/a.md', { content: 'v1' }));
      await sleep(15);
      const before = await commitCount(server.gitdir());
      const res = await put(server, writer, 'upd/a.md', { content: 'v2' });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const updated = itemOf(res);
      expectTextItem(updated, { orgId: 'default', path: 'upd/a.md', content: 'v2' });
      expect(updated.id).to.equal(created.id);
      expect(updated.createdAt).to.equal(created.createdAt);
      expect(updated.updatedAt).to.not.equal(created.updatedAt);
      expect(Date.parse(updated.updatedAt)).to.be.above(Date.parse(created.updatedAt));
      expect(await commitCount(server.gitdir())).to.equal(before + 1);
      const fetched = itemOf(await get(server, reader, 'upd/a.md'));
      expect(fetched).to.deep.equal(updated);
    });

    it('an admin can update what a writer created, and the other way round', async () => {
      expect((await put(server, writer, 'upd/shared.md', { content: 'w' })).status).to.equal(200);
      expect(itemOf(await put(server, admin, 'upd/shared.md', { content: 'a' })).content).to.equal('a');
      expect(itemOf(await put(server, writer, 'upd/shared.md', { content: 'w2' })).content).to.equal('w2');
    });

    it('an identical PUT returns 200 with the item unchanged and makes no commit', async () => {
      const first = itemOf(await put(server, writer, 'upd/same.md', { content: 'same' }));
      const before = await commitCount(server.gitdir());
      const head = (await git(['rev-parse', 'main'], { gitdir: server.gitdir() })).trim();
      await sleep(15);
      const res = await put(server, writer, 'upd/same.md', { content: 'same' });
      expect(res.status).to.equal(200);
      expect(itemOf(res)).to.deep.equal(first);
      const again = await put(server, writer, 'upd/same.md', { content: 'same', message: 'nothing to say' });
      expect(again.status).to.equal(200);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expect((await git(['rev-parse', 'main'], { gitdir: server.gitdir() })).trim()).to.equal(head);
    });
  });

  describe('commit message', () => {
    it('`message` becomes the commit message on create', async () => {
      const res = await put(server, writer, 'msg/a.md', { content: 'a', message: 'Add the onboarding notes' });
      expect(res.status).to.equal(200);
      expect(await lastMessage()).to.equal('Add the onboarding notes');
    });

    it('`message` becomes the commit message on update (multi-line kept)', async () => {
      const res = await put(server, writer, 'msg/a.md', { content: 'b', message: 'Fix typo\n\nIn the second paragraph.' });
      expect(res.status).to.equal(200);
      expect(await lastMessage()).to.equal('Fix typo\n\nIn the second paragraph.');
    });

    it('a message of exactly 1000 characters is accepted', async () => {
      const message = `${'m'.repeat(999)}!`;
      const res = await put(server, writer, 'msg/long.md', { content: 'x', message });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(await lastMessage()).to.equal(message);
    });

    it('without a message the commit still names the path', async () => {
      expect((await put(server, writer, 'msg/default.md', { content: 'x' })).status).to.equal(200);
      expect(await lastMessage()).to.contain('msg/default.md');
    });
  });

  describe('403 for a role without knowledge:write', () => {
    it('reader PUT on a new path -> 403 exact message, nothing created', async () => {
      const before = await commitCount(server.gitdir());
      expectError(await put(server, reader, 'ro/new.md', { content: 'x' }), 403, MSG.forbiddenWrite);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expectError(await get(server, admin, 'ro/new.md'), 404, MSG.notFound);
    });

    it('reader PUT on an existing path -> 403 exact message, content unchanged', async () => {
      expect((await put(server, writer, 'ro/existing.md', { content: 'kept' })).status).to.equal(200);
      const before = await commitCount(server.gitdir());
      expectError(await put(server, reader, 'ro/existing.md', { content: 'changed' }), 403, MSG.forbiddenWrite);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expect(itemOf(await get(server, admin, 'ro/existing.md')).content).to.equal('kept');
    });
  });

  describe('409 when a soft-deleted item holds the path', () => {
    it('PUT after DELETE -> 409 exact message, nothing changes, the item stays deleted', async () => {
      expect((await put(server, writer, 'trash/gone.md', { content: 'old' })).status).to.equal(200);
      expect((await del(server, admin, 'trash/gone.md')).status).to.equal(200);
      const before = await commitCount(server.gitdir());
      expectError(await put(server, writer, 'trash/gone.md', { content: 'new' }), 409, MSG.inTrash);
      expectError(await put(server, admin, 'trash/gone.md', { content: 'new' }), 409, MSG.inTrash);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expectError(await get(server, admin, 'trash/gone.md'), 404, MSG.notFound);
    });

    it('...also with an identical content', async () => {
      expect((await put(server, writer, 'trash/same.md', { content: 'same' })).status).to.equal(200);
      expect((await del(server, admin, 'trash/same.md')).status).to.equal(200);
      expectError(await put(server, writer, 'trash/same.md', { content: 'same' }), 409, MSG.inTrash);
    });
  });

  describe('path conflicts', () => {
    it('PUT a.md then a.md/b.md -> 409 (an item is not a folder), nothing changes', async () => {
      expect((await put(server, writer, 'conf/a.md', { content: 'file' })).status).to.equal(200);
      const before = await commitCount(server.gitdir());
      const res = await put(server, writer, 'conf/a.md/b.md', { content: 'under a file' });
      expectError(res, 409);
      expect(res.body?.error).to.not.equal(MSG.inTrash);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expect(itemOf(await get(server, reader, 'conf/a.md')).content).to.equal('file');
      expectError(await get(server, reader, 'conf/a.md/b.md'), 404, MSG.notFound);
    });

    it('PUT f.md/x.md then f.md -> 409 (a folder is not an item), nothing changes', async () => {
      expect((await put(server, writer, 'conf/f.md/x.md', { content: 'inside' })).status).to.equal(200);
      const before = await commitCount(server.gitdir());
      expectError(await put(server, writer, 'conf/f.md', { content: 'over a folder' }), 409);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expect(itemOf(await get(server, reader, 'conf/f.md/x.md')).content).to.equal('inside');
      expectError(await get(server, reader, 'conf/f.md'), 404, MSG.notFound);
    });
  });

  describe('conditional requests', () => {
    const etagOf = async (path: string): Promise<string> => {
      const res = await get(server, reader, path);
      expect(res.status).to.equal(200);
      const etag = res.headers.get('etag');
      expect(etag, 'ETag header').to.be.a('string').and.not.equal('');
      return etag as string;
    };

    it('If-Match with the current ETag -> 200 and the update is made', async () => {
      expect((await put(server, writer, 'cond/a.md', { content: 'v1' })).status).to.equal(200);
      const etag = await etagOf('cond/a.md');
      const res = await put(server, writer, 'cond/a.md', { content: 'v2' }, { 'If-Match': etag });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(itemOf(res).content).to.equal('v2');
      expect(itemOf(await get(server, reader, 'cond/a.md')).content).to.equal('v2');
    });

    it('If-Match with a stale ETag -> 412 exact message, nothing changes', async () => {
      expect((await put(server, writer, 'cond/b.md', { content: 'v1' })).status).to.equal(200);
      const stale = await etagOf('cond/b.md');
      expect((await put(server, writer, 'cond/b.md', { content: 'v2' })).status).to.equal(200);
      const before = await commitCount(server.gitdir());
      expectError(await put(server, writer, 'cond/b.md', { content: 'v3' }, { 'If-Match': stale }), 412, MSG.changed);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expect(itemOf(await get(server, reader, 'cond/b.md')).content).to.equal('v2');
    });

    it('If-Match with an invented ETag -> 412', async () => {
      expect((await put(server, writer, 'cond/c.md', { content: 'v1' })).status).to.equal(200);
      expectError(await put(server, writer, 'cond/c.md', { content: 'v2' }, { 'If-Match': '"nope"' }), 412, MSG.changed);
      expect(itemOf(await get(server, reader, 'cond/c.md')).content).to.equal('v1');
    });

    it('If-Match on a path without an item -> 412, nothing created', async () => {
      const before = await commitCount(server.gitdir());
      expectError(await put(server, writer, 'cond/absent.md', { content: 'x' }, { 'If-Match': '"abc"' }), 412, MSG.changed);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expectError(await get(server, reader, 'cond/absent.md'), 404, MSG.notFound);
    });

    it('If-None-Match: * on an existing item -> 412, nothing changes', async () => {
      expect((await put(server, writer, 'cond/d.md', { content: 'v1' })).status).to.equal(200);
      const before = await commitCount(server.gitdir());
      const res = await put(server, writer, 'cond/d.md', { content: 'v2' }, { 'If-None-Match': '*' });
      expectError(res, 412, /^Precondition failed/);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expect(itemOf(await get(server, reader, 'cond/d.md')).content).to.equal('v1');
    });

    it('If-None-Match: * on a new path -> 200, the item is created', async () => {
      const res = await put(server, writer, 'cond/new.md', { content: 'fresh' }, { 'If-None-Match': '*' });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(itemOf(await get(server, reader, 'cond/new.md')).content).to.equal('fresh');
    });

    it('without conditions the last write wins', async () => {
      expect((await put(server, writer, 'cond/lww.md', { content: 'first' })).status).to.equal(200);
      expect((await put(server, admin, 'cond/lww.md', { content: 'second' })).status).to.equal(200);
      expect(itemOf(await get(server, reader, 'cond/lww.md')).content).to.equal('second');
    });
  });

  describe('concurrent requests', () => {
    it('parallel PUTs to distinct paths: all 200, one commit each, all listed', async () => {
      const before = await commitCount(server.gitdir());
      const paths = Array.from({ length: 12 }, (_, i) => `par/item-${String(i).padStart(2, '0')}.md`);
      const results = await Promise.all(paths.map((p) => put(server, writer, p, { content: `body ${p}` })));
      expect(results.map((r) => r.status)).to.deep.equal(paths.map(() => 200));
      expect(await commitCount(server.gitdir())).to.equal(before + paths.length);
      for (const p of paths) expect(itemOf(await get(server, reader, p)).content).to.equal(`body ${p}`);
    });

    it('parallel creates of one path with If-None-Match: * -> exactly one 200, the others 412', async () => {
      const before = await commitCount(server.gitdir());
      const results = await Promise.all(
        Array.from({ length: 8 }, (_, i) => put(server, writer, 'par/once.md', { content: `writer ${i}` }, { 'If-None-Match': '*' })),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses).to.deep.equal([200, 412, 412, 412, 412, 412, 412, 412]);
      expect(await commitCount(server.gitdir())).to.equal(before + 1);
      const winner = results.find((r) => r.status === 200);
      expect(itemOf(await get(server, reader, 'par/once.md')).content).to.equal(winner && itemOf(winner).content);
    });

    it('parallel updates of one item with the same If-Match -> exactly one 200, the others 412', async () => {
      expect((await put(server, writer, 'par/cas.md', { content: 'base' })).status).to.equal(200);
      const etag = (await get(server, reader, 'par/cas.md')).headers.get('etag') as string;
      const before = await commitCount(server.gitdir());
      const results = await Promise.all(
        Array.from({ length: 6 }, (_, i) => put(server, writer, 'par/cas.md', { content: `update ${i}` }, { 'If-Match': etag })),
      );
      expect(results.filter((r) => r.status === 200)).to.have.length(1);
      for (const r of results.filter((x) => x.status !== 200)) expectError(r, 412, MSG.changed);
      expect(await commitCount(server.gitdir())).to.equal(before + 1);
    });
  });

  describe('afterwards', () => {
    it('the repositories pass git fsck --strict after all of the above', async () => {
      await fsckStrict(server.gitdir());
      await fsckStrict(server.gitdir('acme'));
    });
  });
});
