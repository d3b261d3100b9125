import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/server.js';
import { api } from '../support/server.js';
import { sleep } from '../support/sleep.js';
import { del, expectError, expectTextItem, get, itemOf, itemUrl, MSG, put } from './helpers.js';

describe('HTTP GET /api/v1/knowledge/items/{path}', () => {
  let server: TestServer;
  let reader: string;
  let writer: string;

  before(async () => {
    server = await startTestServer();
    reader = await server.key('reader');
    writer = await server.key('writer');
  });
  after(() => server?.close());

  it('200 with data.item: every KnowledgeItem field, for a top-level and a nested path', async () => {
    for (const path of ['top.md', 'a/b/c/d/e/nested.json']) {
      const created = itemOf(await put(server, writer, path, { content: `{"at":"${path}"}` }));
      const res = await get(server, reader, path);
      expect(res.status).to.equal(200);
      expect(res.body?.success).to.equal(true);
      const item = itemOf(res);
      expectTextItem(item, { orgId: 'default', path, content: `{"at":"${path}"}` });
      expect(item.id).to.equal(created.id);
      expect(item.createdAt).to.equal(created.createdAt);
      expect(item.updatedAt).to.equal(created.updatedAt);
    }
  });

  it('404 Knowledge item not found for a path that never held an item', async () => {
    expectError(await get(server, reader, 'never/there.md'), 404, MSG.notFound);
  });

  it('404 for a folder that holds items (a folder is not an item)', async () => {
    expect((await put(server, writer, 'folder.d/inside.md', { content: 'x' })).status).to.equal(200);
    expectError(await get(server, reader, 'folder.d'), 404, MSG.notFound);
  });

  it('404 Knowledge item not found once the item is soft-deleted', async () => {
    expect((await put(server, writer, 'soon-gone.md', { content: 'x' })).status).to.equal(200);
    expect((await get(server, reader, 'soon-gone.md')).status).to.equal(200);
    expect((await del(server, server.adminKey, 'soon-gone.md')).status).to.equal(200);
    expectError(await get(server, reader, 'soon-gone.md'), 404, MSG.notFound);
    expectError(await get(server, server.adminKey, 'soon-gone.md'), 404, MSG.notFound);
  });

  it('the deleted item is not reachable through its trash path either', async () => {
    expectError(await get(server, server.adminKey, '.trash/soon-gone.md'), 400, /^Invalid path:/);
  });

  describe('ETag', () => {
    it('is present and stable while the item does not change', async () => {
      expect((await put(server, writer, 'etag/a.md', { content: 'one' })).status).to.equal(200);
      const first = await get(server, reader, 'etag/a.md');
      const etag = first.headers.get('etag');
      expect(etag, 'ETag header').to.be.a('string').and.have.length.above(2);
      expect(etag).to.match(/^(W\/)?"[^"]+"$/);
      expect((await get(server, reader, 'etag/a.md')).headers.get('etag')).to.equal(etag);
    });

    it('changes when the item is updated', async () => {
      const before = (await get(server, reader, 'etag/a.md')).headers.get('etag');
      await sleep(5);
      expect((await put(server, writer, 'etag/a.md', { content: 'two' })).status).to.equal(200);
      const after = (await get(server, reader, 'etag/a.md')).headers.get('etag');
      expect(after).to.be.a('string');
      expect(after).to.not.equal(before);
    });

    it('differs between two items with the same content', async () => {
      expect((await put(server, writer, 'etag/x.md', { content: 'same' })).status).to.equal(200);
      expect((await put(server, writer, 'etag/y.md', { content: 'same' })).status).to.equal(200);
      const x = (await get(server, reader, 'etag/x.md')).headers.get('etag');
      const y = (await get(server, reader, 'etag/y.md')).headers.get('etag');
      expect(x).to.not.equal(y);
    });

    it('If-None-Match with the current ETag -> 304 without a body', async () => {
      const etag = (await get(server, reader, 'etag/a.md')).headers.get('etag') as string;
      const res = await get(server, reader, 'etag/a.md', { 'If-None-Match': etag });
      expect(res.status).to.equal(304);
      expect(res.body).to.equal(undefined);
      expect(res.headers.get('etag')).to.equal(etag);
    });

    it('If-None-Match with an old ETag -> 200 with the current item', async () => {
      const old = (await get(server, reader, 'etag/a.md')).headers.get('etag') as string;
      expect((await put(server, writer, 'etag/a.md', { content: 'three' })).status).to.equal(200);
      const res = await get(server, reader, 'etag/a.md', { 'If-None-Match': old });
      expect(res.status).to.equal(200);
      expect(itemOf(res).content).to.equal('three');
      expect(res.headers.get('etag')).to.not.equal(old);
    });

    it('If-None-Match does not turn a missing item into a 304', async () => {
      expectError(await get(server, reader, 'etag/missing.md', { 'If-None-Match': '*' }), 404, MSG.notFound);
    });
  });

  it('an unknown query parameter -> 400', async () => {
    expect((await put(server, writer, 'q.md', { content: 'x' })).status).to.equal(200);
    expectError(await api(`${itemUrl(server, 'q.md')}?foo=bar`, { key: reader }), 400);
  });
});
