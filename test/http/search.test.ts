import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { ConfigError, loadConfig } from '../../src/app/config.js';
import { createLogger } from '../../src/common/log.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { urlOf } from './adminApi.js';
import { del, expectError, put } from './helpers.js';

interface Result {
  path: string;
  score: number;
  snippet: string;
  item: Record<string, unknown>;
}

function search(server: TestServer, key: string, query: string): Promise<ApiResponse> {
  return api(urlOf(server, `/search?${query}`), { key });
}

/** The results and cursor of a 200 search; checks the envelope and each result's shape. */
async function results(server: TestServer, key: string, query: string): Promise<{ results: Result[]; nextCursor: string | null }> {
  const res = await search(server, key, query);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  const data = res.body?.data as { results: Result[]; nextCursor: string | null };
  expect(Object.keys(data).sort()).to.deep.equal(['nextCursor', 'results']);
  for (const r of data.results) {
    expect(Object.keys(r).sort()).to.deep.equal(['item', 'path', 'score', 'snippet']);
    expect(r.item.path).to.equal(r.path);
    expect(r.item).to.not.have.property('content');
    expect(r.item).to.include.keys('id', 'organizationId', 'itemType', 'requiredReadPermission', 'createdAt', 'updatedAt');
    expect(r.snippet.length).to.be.at.most(300);
  }
  return data;
}

const paths = async (server: TestServer, key: string, query: string): Promise<string[]> =>
  (await results(server, key, query)).results.map((r) => r.path);

async function ok(res: Promise<ApiResponse>): Promise<ApiResponse> {
  const r = await res;
  expect(r.status, JSON.stringify(r.body)).to.be.oneOf([200, 201]);
  return r;
}

const q = (text: string): string => `q=${encodeURIComponent(text)}`;

describe('HTTP search: GET /search', function () {
  this.timeout(60_000);

  let server: TestServer;
  let admin: string;
  let writer: string;
  let reader: string;
  let other: string;

  before(async () => {
    server = await startTestServer();
    admin = server.adminKey;
    writer = await server.key('writer');
    reader = await server.key('reader');
    other = await server.org('other');
    await ok(put(server, writer, 'notes/garden.md', { content: 'The tomato plants need water every morning. Basil grows beside them.' }));
    await ok(put(server, writer, 'notes/kitchen.md', { content: 'A tomato sauce: simmer tomatoes with basil and garlic for an hour.' }));
    await ok(put(server, writer, 'tomato/varieties.md', { content: 'Cherry, plum and beefsteak are common kinds.' }));
    await ok(put(server, writer, 'recipes/soup.md', { content: 'Vegetable soup with leeks, carrots and a little thyme.' }));
    await ok(put(server, writer, 'recipes/cafe.md', { content: 'The Café on the corner serves crème brûlée.' }));
    await ok(put(server, admin, 'board/plans.md', { content: 'Secret tomato strategy for next year.', requiredReadPermission: 'knowledge:admin' }));
    await ok(put(server, other, 'notes/theirs.md', { content: 'Their tomato notes, in another organization.' }));
  });
  after(() => server?.close());

  it('finds items by a word in their content, each with its item, a score and a snippet with the matches marked', async () => {
    const data = await results(server, reader, q('garlic'));
    expect(data.results.map((r) => r.path)).to.deep.equal(['notes/kitchen.md']);
    const [hit] = data.results as [Result];
    expect(hit.snippet).to.include('«garlic»');
    expect(hit.score).to.be.a('number').and.to.be.above(0);
    expect(hit.item.organizationId).to.equal('default');
    expect(data.nextCursor).to.equal(null);
  });

  it('needs every word (AND), and ranks a match in the path above matches in the content', async () => {
    expect(await paths(server, reader, q('tomato basil'))).to.have.members(['notes/garden.md', 'notes/kitchen.md']);
    const tomato = await results(server, reader, q('tomato'));
    expect(tomato.results[0]?.path).to.equal('tomato/varieties.md');
    expect(tomato.results.map((r) => r.path)).to.have.members(['tomato/varieties.md', 'notes/garden.md', 'notes/kitchen.md']);
    const scores = tomato.results.map((r) => r.score);
    expect(scores).to.deep.equal([...scores].sort((a, b) => b - a));
    expect(scores[0]).to.be.above(1);
    expect(scores[1]).to.be.below(1);
  });

  it('"exact phrases", -exclusions and prefix* words', async () => {
    expect(await paths(server, reader, q('"tomato sauce"'))).to.deep.equal(['notes/kitchen.md']);
    expect(await paths(server, reader, q('"sauce tomato"'))).to.deep.equal([]);
    expect(await paths(server, reader, q('tomato -garlic'))).to.have.members(['tomato/varieties.md', 'notes/garden.md']);
    expect(await paths(server, reader, q('tomato -"tomato sauce" -cherry'))).to.deep.equal(['notes/garden.md']);
    expect(await paths(server, reader, q('veget*'))).to.deep.equal(['recipes/soup.md']);
    expect(await paths(server, reader, q('toma* -garden'))).to.have.members(['tomato/varieties.md', 'notes/kitchen.md']);
  });

  it('ignores case and accents, and reads operators a client did not mean as text', async () => {
    expect(await paths(server, reader, q('CAFE creme'))).to.deep.equal(['recipes/cafe.md']);
    expect(await paths(server, reader, q('brulee'))).to.deep.equal(['recipes/cafe.md']);
    expect(await paths(server, reader, q('tomato OR leeks'))).to.deep.equal([]);
    expect(await paths(server, reader, q('path:soup'))).to.deep.equal([]);
    expect(await paths(server, reader, q('NEAR(tomato basil)'))).to.deep.equal([]);
    expect(await paths(server, reader, q('body : thyme'))).to.deep.equal([]);
  });

  it('prefix= keeps to one folder', async () => {
    expect(await paths(server, reader, `${q('tomato')}&prefix=notes/`)).to.have.members(['notes/garden.md', 'notes/kitchen.md']);
    expect(await paths(server, reader, `${q('tomato')}&prefix=recipes/`)).to.deep.equal([]);
    expect(await paths(server, reader, `${q('tomato')}&prefix=tomato/`)).to.deep.equal(['tomato/varieties.md']);
  });

  it('pages with limit and cursor, through every result exactly once', async () => {
    for (let i = 0; i < 7; i++) await ok(put(server, writer, `paging/p${i}.md`, { content: `zucchini number ${i}` }));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const page: { results: Result[]; nextCursor: string | null } = await results(server, reader, `${q('zucchini')}&limit=3${cursor ? `&cursor=${cursor}` : ''}`);
      expect(page.results.length).to.be.at.most(3);
      seen.push(...page.results.map((r) => r.path));
      cursor = page.nextCursor;
      pages++;
    } while (cursor);
    expect(pages).to.equal(3);
    expect(seen).to.have.lengthOf(7);
    expect(new Set(seen).size).to.equal(7);
  });

  it('never shows, counts or pages over an item the role may not read', async () => {
    expect(await paths(server, reader, q('strategy'))).to.deep.equal([]);
    expect(await paths(server, writer, q('strategy'))).to.deep.equal([]);
    expect(await paths(server, admin, q('strategy'))).to.deep.equal(['board/plans.md']);
    const page = await results(server, reader, `${q('tomato')}&limit=3`);
    expect(page.results.map((r) => r.path)).to.not.include('board/plans.md');
    expect(page.nextCursor, 'three readable tomato items fill the page exactly').to.equal(null);
    expect(await paths(server, admin, `${q('tomato')}&limit=4`)).to.include('board/plans.md');
  });

  it('keeps organizations apart', async () => {
    expect(await paths(server, other, q('tomato'))).to.deep.equal(['notes/theirs.md']);
    expect(await paths(server, admin, q('another organization'))).to.deep.equal([]);
  });

  describe('read-your-writes: each change is searchable by the very next request', () => {
    it('a created item is found, an updated one by its new words only', async () => {
      await ok(put(server, writer, 'ryw/a.md', { content: 'quince jelly' }));
      expect(await paths(server, reader, q('quince'))).to.deep.equal(['ryw/a.md']);
      await ok(put(server, writer, 'ryw/a.md', { content: 'medlar jam' }));
      expect(await paths(server, reader, q('quince'))).to.deep.equal([]);
      expect(await paths(server, reader, q('medlar'))).to.deep.equal(['ryw/a.md']);
    });

    it('a deleted item is gone, a restored one back, a purged one gone for good', async () => {
      await ok(put(server, writer, 'ryw/b.md', { content: 'persimmon' }));
      await ok(del(server, admin, 'ryw/b.md'));
      expect(await paths(server, admin, q('persimmon'))).to.deep.equal([]);
      await ok(api(urlOf(server, '/trash/restore'), { method: 'POST', key: admin, body: { path: 'ryw/b.md' } }));
      expect(await paths(server, reader, q('persimmon'))).to.deep.equal(['ryw/b.md']);
      await ok(del(server, admin, 'ryw/b.md'));
      await ok(api(urlOf(server, '/trash/items/ryw/b.md'), { method: 'DELETE', key: admin }));
      expect(await paths(server, admin, q('persimmon'))).to.deep.equal([]);
    });

    it('a rollback brings back the old words', async () => {
      await ok(put(server, writer, 'ryw/c.md', { content: 'kumquat' }));
      await ok(put(server, writer, 'ryw/c.md', { content: 'loquat' }));
      await ok(api(urlOf(server, '/rollback'), { method: 'POST', key: writer, body: { path: 'ryw/c.md', version: 1 } }));
      expect(await paths(server, reader, q('kumquat'))).to.deep.equal(['ryw/c.md']);
      expect(await paths(server, reader, q('loquat'))).to.deep.equal([]);
    });

    it("a folder rule hides and reveals at once; an item's own permission too", async () => {
      await ok(put(server, writer, 'vault/d.md', { content: 'tamarind' }));
      expect(await paths(server, reader, q('tamarind'))).to.deep.equal(['vault/d.md']);
      await ok(api(urlOf(server, '/folders/vault'), { method: 'PUT', key: admin, body: { requiredReadPermission: 'knowledge:write' } }));
      expect(await paths(server, reader, q('tamarind'))).to.deep.equal([]);
      expect(await paths(server, writer, q('tamarind'))).to.deep.equal(['vault/d.md']);
      await ok(api(urlOf(server, '/folders/vault'), { method: 'PUT', key: admin, body: { requiredReadPermission: 'inherit' } }));
      expect(await paths(server, reader, q('tamarind'))).to.deep.equal(['vault/d.md']);
      await ok(put(server, admin, 'vault/d.md', { content: 'tamarind', requiredReadPermission: 'knowledge:admin' }));
      expect(await paths(server, writer, q('tamarind'))).to.deep.equal([]);
    });

    it('a write answered while searches run concurrently is found by the next one', async () => {
      const writes = Array.from({ length: 12 }, (_, i) => ok(put(server, writer, `burst/i${i}.md`, { content: `rambutan ${i}` })));
      const searches = Array.from({ length: 12 }, () => search(server, reader, q('rambutan')));
      await Promise.all([...writes, ...searches]);
      expect(await paths(server, reader, `${q('rambutan')}&limit=100`)).to.have.lengthOf(12);
    });
  });

  describe('bad input: a 400 that says what is wrong, never a 500', () => {
    const cases: Array<[string, string, RegExp]> = [
      ['no q', '', /q/],
      ['an empty q', 'q=', /q must not be empty/],
      ['a blank q', q('   '), /q must not be empty/],
      ['q over 500 characters', q('a'.repeat(501)), /at most 500 characters/],
      ['an unclosed quote', q('"tomato sauce'), /unclosed quote/],
      ['only exclusions', q('-tomato -basil'), /not only exclusions/],
      ['only punctuation', q('*** --- !!!'), /a word to search for/],
      ['a one-letter prefix', q('t*'), /at least 2 letters/],
      ['too many terms', q(Array.from({ length: 17 }, (_, i) => `w${i}`).join(' ')), /at most 16/],
      ['limit 0', `${q('tomato')}&limit=0`, /limit/],
      ['limit 101', `${q('tomato')}&limit=101`, /limit/],
      ['a bad cursor', `${q('tomato')}&cursor=nonsense`, /Invalid cursor/],
      ['a prefix without a slash', `${q('tomato')}&prefix=notes`, /prefix/],
      ['an unknown parameter', `${q('tomato')}&sort=date`, /sort/],
      ['q twice', `${q('tomato')}&${q('basil')}`, /q/],
    ];
    for (const [name, query, message] of cases) {
      it(name, async () => {
        const res = await search(server, reader, query);
        expectError(res, 400);
        expect(res.body?.error).to.match(message);
      });
    }

    it('odd Unicode is searched as text: emoji, CJK, right-to-left, combining marks, lone surrogates', async () => {
      await ok(put(server, writer, 'uni/e.md', { content: 'Grüße 東京 שלום 🍅 naïve' }));
      expect(await paths(server, reader, q('東京'))).to.deep.equal(['uni/e.md']);
      expect(await paths(server, reader, q('שלום'))).to.deep.equal(['uni/e.md']);
      expect(await paths(server, reader, q('gruße naive'))).to.deep.equal(['uni/e.md']);
      // Decomposed "ï" (i + combining diaeresis) finds the composed one.
      expect(await paths(server, reader, q('nai\u0308ve'))).to.deep.equal(['uni/e.md']);
      // Percent-encoded as they are, invalid UTF-8 (a lone surrogate's bytes, a stray continuation byte) included.
      for (const odd of ['%F0%9F%8D%85', '%E2%80%8B', '%00tomato', 'tomato%ED%A0%80', 'tomato%80', '%22%22%20tomato', '-', '*', '%C0%AF']) {
        const res = await search(server, reader, `q=${odd}`);
        expect(res.status, `${JSON.stringify(odd)}: ${JSON.stringify(res.body)}`).to.be.oneOf([200, 400]);
      }
    });

    it('a reader may search; a request without a key may not', async () => {
      expect((await search(server, reader, q('tomato'))).status).to.equal(200);
      const res = await api(urlOf(server, `/search?${q('tomato')}`));
      expectError(res, 401);
    });
  });
});

describe('HTTP search turned off (KNOWLEDGE_SEARCH=off)', function () {
  this.timeout(60_000);

  it('keeps no index file and answers /search with a 404 that says so; the rest works', async () => {
    const server = await startTestServer({ config: { search: false } });
    try {
      await ok(put(server, server.adminKey, 'a/b.md', { content: 'tomato' }));
      const res = await search(server, server.adminKey, q('tomato'));
      expectError(res, 404, 'Search is turned off on this server (KNOWLEDGE_SEARCH=off)');
      expect(existsSync(`${server.gitdir()}/knowledge-search.sqlite`)).to.equal(false);
    } finally {
      await server.close();
    }
  });

  it('the setting takes on or off, from the environment or the flag', () => {
    expect(loadConfig({}).search).to.equal(true);
    expect(loadConfig({ KNOWLEDGE_SEARCH: 'off' }).search).to.equal(false);
    expect(loadConfig({ KNOWLEDGE_SEARCH: 'off' }, { search: 'on' }).search).to.equal(true);
    expect(() => loadConfig({ KNOWLEDGE_SEARCH: 'no' })).to.throw(ConfigError, 'KNOWLEDGE_SEARCH must be on or off (got "no")');
  });
});

describe('HTTP search: the page caches of all organizations share KNOWLEDGE_SEARCH_CACHE_MB', function () {
  this.timeout(60_000);

  it('shares the figure among the organizations opened, and every one still answers', async () => {
    const lines: Array<{ msg: string; indexes?: number; kibEach?: number }> = [];
    const logger = createLogger({ level: 'info', write: (line) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
    const server = await startTestServer({ config: { searchCacheBytes: loadConfig({ KNOWLEDGE_SEARCH_CACHE_MB: '16' }).searchCacheBytes }, logger });
    try {
      const keys = [server.adminKey];
      for (const orgId of ['acme', 'globex', 'initech']) keys.push(await server.org(orgId));
      for (const [i, key] of keys.entries()) {
        await ok(put(server, key, 'a/b.md', { content: `tomato ${i}` }));
        const res = await search(server, key, q('tomato'));
        expect(res.status).to.equal(200);
        expect((res.body?.data?.results as unknown[]).length).to.equal(1);
      }
      const shared = lines.filter((l) => l.msg === 'search page caches shared out');
      // Four indexes in 16 MiB: 8 MiB each for two, 4 MiB each for three and four.
      expect(shared.map((l) => [l.indexes, l.kibEach])).to.deep.equal([[2, 8_192], [3, 4_096]]);
    } finally {
      await server.close();
    }
  });

  it('warns at start when more organizations may stay open than their indexes fit in SQLite\'s heap', async () => {
    for (const [maxOpenOrgs, warned] of [[0, true], [7_000, true], [1_000, false]] as const) {
      const lines: Array<{ msg: string; level: string; indexesThatFit?: number }> = [];
      const logger = createLogger({ level: 'info', write: (line) => void lines.push(JSON.parse(line) as (typeof lines)[number]) });
      const server = await startTestServer({ config: { maxOpenOrgs }, logger });
      await server.close();
      const warning = lines.filter((l) => l.level === 'warn' && l.msg.startsWith('more organizations may stay open than search indexes fit'));
      expect(warning.map((l) => l.indexesThatFit), `KNOWLEDGE_MAX_OPEN_ORGS=${maxOpenOrgs}`).to.deep.equal(warned ? [6_144] : []);
    }
  });

  it('the setting is MiB, from the environment or the flag, 1 to 1024', () => {
    expect(loadConfig({}).searchCacheBytes).to.equal(256 * 1024 * 1024);
    expect(loadConfig({ KNOWLEDGE_SEARCH_CACHE_MB: '64' }).searchCacheBytes).to.equal(64 * 1024 * 1024);
    expect(loadConfig({ KNOWLEDGE_SEARCH_CACHE_MB: '64' }, { searchCacheMb: '8' }).searchCacheBytes).to.equal(8 * 1024 * 1024);
    expect(() => loadConfig({ KNOWLEDGE_SEARCH_CACHE_MB: '0' })).to.throw(ConfigError, 'KNOWLEDGE_SEARCH_CACHE_MB must be an integer from 1 to 1024 (got "0")');
  });
});
