import { expect } from 'chai';
import { commitCount } from '../support/git.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { del, expectError, expectTextItem, itemsOf, list, LIST, MSG, put, type Item } from './helpers.js';

/** Bytewise ascending order, written out by hand (localeCompare or a git tree order would differ). */
const SORTED = ['0.md', 'a-b.md', 'a.md', 'a/b/c.md', 'a/x.md', 'a0.md', 'a_b.md', 'b.md', 'docs/guide.md', 'docs/z/deep.md', 'docsx.md', 'z/a.md'];
const INSERT_ORDER = ['z/a.md', 'b.md', 'docs/z/deep.md', 'a_b.md', 'a.md', 'docsx.md', 'a/x.md', '0.md', 'a0.md', 'docs/guide.md', 'a-b.md', 'a/b/c.md'];

describe('HTTP list: GET /api/v1/knowledge', () => {
  let server: TestServer;
  let reader: string;

  before(async () => {
    server = await startTestServer();
    reader = await server.key('reader');
    for (const path of INSERT_ORDER) {
      const res = await put(server, server.adminKey, path, { content: `content of ${path}` });
      expect(res.status, `${path}: ${JSON.stringify(res.body)}`).to.equal(200);
    }
  });
  after(() => server?.close());

  it('returns 200 with every item, every KnowledgeItem field and its content', async () => {
    const items = itemsOf(await list(server, reader));
    expect(items).to.have.length(SORTED.length);
    for (const item of items) expectTextItem(item, { orgId: 'default', path: item.path, content: `content of ${item.path}` });
    expect(new Set(items.map((i) => i.id)).size).to.equal(SORTED.length);
  });

  it('sorts by path, bytewise ascending', async () => {
    const items = itemsOf(await list(server, reader));
    expect(items.map((i) => i.path)).to.deep.equal(SORTED);
  });

  it('an organization without items lists an empty array', async () => {
    const acme = await server.org('acme');
    expect(itemsOf(await list(server, acme))).to.deep.equal([]);
  });

  it('prefix=docs/ returns only items under docs/ (not docsx.md), in order', async () => {
    const items = itemsOf(await list(server, reader, '?prefix=docs/'));
    expect(items.map((i) => i.path)).to.deep.equal(['docs/guide.md', 'docs/z/deep.md']);
  });

  it('prefix of a nested folder and of an absent folder', async () => {
    expect(itemsOf(await list(server, reader, '?prefix=a/b/')).map((i) => i.path)).to.deep.equal(['a/b/c.md']);
    expect(itemsOf(await list(server, reader, '?prefix=nothing/')).map((i) => i.path)).to.deep.equal([]);
  });

  it('content=false leaves the content field out and keeps the others', async () => {
    const items = itemsOf(await list(server, reader, '?content=false'));
    expect(items.map((i) => i.path)).to.deep.equal(SORTED);
    for (const item of items) {
      expect(item).to.not.have.property('content');
      expectTextItem(item, { orgId: 'default', path: item.path });
    }
  });

  it('content=true keeps the content', async () => {
    const items = itemsOf(await list(server, reader, '?content=true'));
    expect(items.every((i) => i.content === `content of ${i.path}`)).to.equal(true);
  });

  async function pageThrough(limit: number, extra = ''): Promise<{ pages: Item[][]; cursors: (string | null)[] }> {
    const pages: Item[][] = [];
    const cursors: (string | null)[] = [];
    let cursor: string | null = null;
    for (let guard = 0; guard < 50; guard++) {
      const query: string = `?limit=${limit}${extra}${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
      const res = await list(server, reader, query);
      const items = itemsOf(res);
      expect(res.body?.data, 'data.nextCursor present with limit').to.have.property('nextCursor');
      const next = res.body?.data?.nextCursor as string | null;
      expect(next === null || typeof next === 'string', `nextCursor ${String(next)}`).to.equal(true);
      expect(items.length).to.be.at.most(limit);
      pages.push(items);
      cursors.push(next);
      if (next === null) return { pages, cursors };
      cursor = next;
    }
    throw new Error('paging did not end');
  }

  for (const limit of [1, 2, 5]) {
    it(`limit=${limit} with cursors visits every item exactly once, in order, nextCursor null on the last page`, async () => {
      const { pages, cursors } = await pageThrough(limit);
      expect(pages.flat().map((i) => i.path)).to.deep.equal(SORTED);
      expect(pages).to.have.length(Math.ceil(SORTED.length / limit));
      for (const page of pages.slice(0, -1)) expect(page).to.have.length(limit);
      expect(cursors.slice(0, -1).every((c) => typeof c === 'string' && c.length > 0)).to.equal(true);
      expect(cursors[cursors.length - 1]).to.equal(null);
    });
  }

  it('limit equal to the number of items: one page, nextCursor null', async () => {
    const { pages, cursors } = await pageThrough(SORTED.length);
    expect(pages).to.have.length(1);
    expect(cursors).to.deep.equal([null]);
  });

  it('limit=1000 (the maximum) is accepted', async () => {
    const res = await list(server, reader, '?limit=1000');
    expect(itemsOf(res).map((i) => i.path)).to.deep.equal(SORTED);
    expect(res.body?.data?.nextCursor).to.equal(null);
  });

  it('paging combines with prefix and content=false', async () => {
    const { pages } = await pageThrough(1, '&prefix=a/&content=false');
    expect(pages.flat().map((i) => i.path)).to.deep.equal(['a/b/c.md', 'a/x.md']);
    expect(pages.flat().every((i) => !('content' in i))).to.equal(true);
  });

  it('a soft-deleted item is left out of the list', async () => {
    const scratch = await startTestServer();
    try {
      for (const p of ['one.md', 'two.md', 'three.md']) expect((await put(scratch, scratch.adminKey, p, { content: p })).status).to.equal(200);
      expect((await del(scratch, scratch.adminKey, 'two.md')).status).to.equal(200);
      expect(itemsOf(await list(scratch, scratch.adminKey)).map((i) => i.path)).to.deep.equal(['one.md', 'three.md']);
      const first = await list(scratch, scratch.adminKey, '?limit=1');
      expect(itemsOf(first).map((i) => i.path)).to.deep.equal(['one.md']);
      const second = await list(scratch, scratch.adminKey, `?limit=1&cursor=${encodeURIComponent(String(first.body?.data?.nextCursor))}`);
      expect(itemsOf(second).map((i) => i.path)).to.deep.equal(['three.md']);
      expect(second.body?.data?.nextCursor).to.equal(null);
    } finally {
      await scratch.close();
    }
  });

  const badQueries = [
    '?limit=0',
    '?limit=1001',
    '?limit=-1',
    '?limit=abc',
    '?limit=1.5',
    '?limit=',
    '?foo=1',
    '?limit=2&unknown=x',
    '?prefix=docs',
    '?prefix=/docs/',
    '?prefix=../',
    '?prefix=.trash/',
    '?prefix=Docs/',
    '?prefix=',
    '?cursor=garbage!!!',
    '?limit=2&cursor=%%%',
    '?limit=2&cursor=not-a-cursor',
    '?content=maybe',
  ];
  for (const query of badQueries) {
    it(`bad parameter ${query} -> 400`, async () => {
      const before = await commitCount(server.gitdir());
      const res = await api(`${server.url}${LIST}${query}`, { key: reader });
      expectError(res, 400);
      expect(await commitCount(server.gitdir())).to.equal(before);
    });
  }

  it('401 Invalid API key without a key', async () => {
    expectError(await api(`${server.url}${LIST}`), 401, MSG.invalidKey);
  });
});
