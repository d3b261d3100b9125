import { expect } from 'chai';
import { commitCount, fsckStrict } from '../support/git.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { del, expectError, get, itemOf, itemsOf, list, MSG, put } from './helpers.js';

describe('HTTP DELETE /api/v1/knowledge/items/{path}', () => {
  let server: TestServer;
  let admin: string;
  let writer: string;
  let reader: string;

  before(async () => {
    server = await startTestServer();
    admin = server.adminKey;
    writer = await server.key('writer');
    reader = await server.key('reader');
  });
  after(() => server?.close());

  it('200 {success:true,data:{message:"Knowledge item deleted"}}, one commit', async () => {
    expect((await put(server, writer, 'del/a.md', { content: 'x' })).status).to.equal(200);
    const before = await commitCount(server.gitdir());
    const res = await del(server, admin, 'del/a.md');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ success: true, data: { message: MSG.deleted } });
    expect(await commitCount(server.gitdir())).to.equal(before + 1);
  });

  it('the deleted item is gone from get and list', async () => {
    expectError(await get(server, reader, 'del/a.md'), 404, MSG.notFound);
    expectError(await get(server, admin, 'del/a.md'), 404, MSG.notFound);
    expect(itemsOf(await list(server, admin)).map((i) => i.path)).to.not.include('del/a.md');
  });

  it('404 Knowledge item not found when already deleted, no commit', async () => {
    const before = await commitCount(server.gitdir());
    expectError(await del(server, admin, 'del/a.md'), 404, MSG.notFound);
    expect(await commitCount(server.gitdir())).to.equal(before);
  });

  it('404 Knowledge item not found when there never was an item, no commit', async () => {
    const before = await commitCount(server.gitdir());
    expectError(await del(server, admin, 'del/never.md'), 404, MSG.notFound);
    expect(await commitCount(server.gitdir())).to.equal(before);
  });

  it('404 for a folder path', async () => {
    expect((await put(server, writer, 'del/dir.d/x.md', { content: 'x' })).status).to.equal(200);
    expectError(await del(server, admin, 'del/dir.d'), 404, MSG.notFound);
    expect((await get(server, reader, 'del/dir.d/x.md')).status).to.equal(200);
  });

  for (const role of ['writer', 'reader'] as const) {
    it(`${role} -> 403 Forbidden — requires knowledge:admin permission, the item stays`, async () => {
      const key = role === 'writer' ? writer : reader;
      expect((await put(server, writer, `del/${role}.md`, { content: 'stays' })).status).to.equal(200);
      const before = await commitCount(server.gitdir());
      expectError(await del(server, key, `del/${role}.md`), 403, MSG.forbiddenAdmin);
      expect(await commitCount(server.gitdir())).to.equal(before);
      expect(itemOf(await get(server, reader, `del/${role}.md`)).content).to.equal('stays');
    });
  }

  it('a second admin key of the organization may delete', async () => {
    const otherAdmin = await server.key('admin', 'default', 'second-admin');
    expect((await put(server, writer, 'del/by-second.md', { content: 'x' })).status).to.equal(200);
    const res = await del(server, otherAdmin, 'del/by-second.md');
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ success: true, data: { message: MSG.deleted } });
  });

  it('deleting one item leaves its siblings alone', async () => {
    for (const p of ['sib/a.md', 'sib/b.md', 'sib/c.md']) expect((await put(server, writer, p, { content: p })).status).to.equal(200);
    expect((await del(server, admin, 'sib/b.md')).status).to.equal(200);
    const items = itemsOf(await list(server, reader, '?prefix=sib/'));
    expect(items.map((i) => [i.path, i.content])).to.deep.equal([
      ['sib/a.md', 'sib/a.md'],
      ['sib/c.md', 'sib/c.md'],
    ]);
  });

  it('the path stays occupied: PUT after DELETE -> 409 with the deleted-item message', async () => {
    expectError(await put(server, writer, 'sib/b.md', { content: 'again' }), 409, MSG.inTrash);
  });

  it('the repository passes git fsck --strict', async () => {
    await fsckStrict(server.gitdir());
  });
});
