import { expect } from 'chai';
import { ConfigError, DEFAULTS, loadConfig } from '../../src/app/config.js';
import { isKnowledgeError } from '../../src/common/errors.js';
import { TokenBuckets } from '../../src/http/middleware/rateLimit.js';
import { SearchTime } from '../../src/http/searchTime.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { LIST, put } from './helpers.js';

/**
 * Search time per key (README, Search: "What a query costs"): a key's searches draw on a bucket of milliseconds,
 * charged what each took; past it its searches are 429 until the bucket refills, its other requests untouched.
 */

const clock = (): { now: () => number; advance: (ms: number) => void } => {
  let t = 0;
  return { now: () => t, advance: (ms) => void (t += ms) };
};

describe('search time: buckets charged after the fact (unit)', () => {
  it('admit spends nothing; spend may go below empty, down to one burst of debt, which refills', () => {
    const c = clock();
    // 60 ms a minute: 1 ms a second.
    const buckets = new TokenBuckets({ perMinute: 60, burst: 10 }, { now: c.now });
    expect(buckets.admit('k').allowed).to.equal(true);
    expect(buckets.admit('k').quota.remaining).to.equal(10);
    buckets.spend('k', 4);
    expect(buckets.admit('k').quota.remaining).to.equal(6);
    buckets.spend('k', 8);
    const refused = buckets.admit('k');
    expect(refused.allowed).to.equal(false);
    // 2 ms in debt: one second a millisecond, and the first back.
    expect(refused.quota.retryAfterSeconds).to.equal(3);
    buckets.spend('k', 1_000);
    expect(buckets.admit('k').quota.retryAfterSeconds, 'the debt stops at one burst').to.equal(11);
    c.advance(10_500);
    expect(buckets.admit('k').allowed).to.equal(true);
  });

  it('SearchTime: a search is let in while the key has time left, charged its ms; a failed one costs nothing; keys apart', async () => {
    const c = clock();
    const time = new SearchTime({ msPerMinute: 60, burstMs: 5 }, { now: c.now });
    const runs: string[] = [];
    const search = (who: string, ms: number) => time.spend(who, () => Promise.resolve((runs.push(who), { ms })));
    await search('a', 3);
    await search('a', 3); // admitted with 2 left, charged 3: 1 ms in debt
    const refused = await search('a', 1).then(
      () => null,
      (err: unknown) => err,
    );
    expect(isKnowledgeError(refused) && refused.code).to.equal('SEARCH_TIME_SPENT');
    expect(runs, 'the refused search never ran').to.deep.equal(['a', 'a']);
    await search('b', 1);
    const failing = time.spend('b', () => Promise.reject(new Error('bad query')));
    await failing.catch(() => undefined);
    expect(runs).to.deep.equal(['a', 'a', 'b']);
    c.advance(2_500);
    await search('a', 1);
    expect(runs.at(-1)).to.equal('a');
  });

  it('off (0 ms a minute): never refuses', async () => {
    const time = new SearchTime({ msPerMinute: 0, burstMs: 1 });
    for (let i = 0; i < 100; i++) await time.spend('k', () => Promise.resolve({ ms: 1_000 }));
  });

  it('configuration: 30 s a minute per key by default, half a minute at once; from the environment; 0 is off', () => {
    expect(loadConfig({})).to.deep.include({ searchMsPerKey: 30_000, searchMsPerKeyBurst: 30_000 });
    expect(DEFAULTS.searchMsPerKey).to.equal(30_000);
    expect(loadConfig({ KNOWLEDGE_SEARCH_MS_PER_KEY: '6000' })).to.deep.include({ searchMsPerKey: 6_000, searchMsPerKeyBurst: 6_000 });
    expect(loadConfig({ KNOWLEDGE_SEARCH_MS_PER_KEY: '6000', KNOWLEDGE_SEARCH_MS_PER_KEY_BURST: '500' })).to.deep.include({ searchMsPerKey: 6_000, searchMsPerKeyBurst: 500 });
    expect(loadConfig({ KNOWLEDGE_SEARCH_MS_PER_KEY: '0' }).searchMsPerKey).to.equal(0);
    for (const env of [{ KNOWLEDGE_SEARCH_MS_PER_KEY: '-5' }, { KNOWLEDGE_SEARCH_MS_PER_KEY: 'much' }, { KNOWLEDGE_SEARCH_MS_PER_KEY_BURST: '0' }]) {
      expect(() => loadConfig(env), JSON.stringify(env)).to.throw(ConfigError, /KNOWLEDGE_SEARCH_MS_PER_KEY/);
    }
  });
});

describe('search time per key (HTTP and MCP)', function () {
  this.timeout(60_000);
  let server: TestServer;
  let other: string;
  const SEARCH = '/api/v1/knowledge/search';
  const mcpSearch = async (key: string): Promise<{ isError?: boolean; content: Array<{ text: string }> }> => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search', arguments: { query: 'plum' } } });
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${key}` },
      body,
    });
    expect(res.status).to.equal(200);
    return ((await res.json()) as { result: { isError?: boolean; content: Array<{ text: string }> } }).result;
  };

  before(async () => {
    // 6 ms a minute (a millisecond every 10 s), 20 ms at once: tens of searches spend it, and it stays spent.
    // A spent key's bucket is just below empty, by less than its last search cost: it refills past empty within
    // milliseconds at most, so the tests below allow for one more search let in, never for a fresh bucket.
    server = await startTestServer({ config: { searchMsPerKey: 6, searchMsPerKeyBurst: 20 } });
    other = await server.key('reader');
    for (let i = 0; i < 40; i++) {
      const words = Array.from({ length: 200 }, (_, k) => (k % 7 === i % 7 ? 'plum' : `word${(i * 31 + k) % 97}`)).join(' ');
      expect((await put(server, server.adminKey, `fruit/n${i}.md`, { content: `Notes ${i}. ${words}` })).status).to.equal(200);
    }
    // The first searches of a server compile its statements and load the ranking index (one took over 20 ms):
    // a key of their own takes them, so that the keys below pay what a search costs once warm.
    const warm = await server.key('reader');
    for (let i = 0; i < 5; i++) await api(`${server.url}${SEARCH}?q=plum+word${i}`, { key: warm });
  });
  after(() => server?.close());

  it("past the key's search time: 429 with Retry-After and a message saying when; its other requests and other keys go on", async () => {
    let refused: Awaited<ReturnType<typeof api>> | undefined;
    let served = 0;
    for (let i = 0; i < 5_000 && !refused; i++) {
      const res = await api(`${server.url}${SEARCH}?q=plum+word${i % 97}&limit=20`, { key: server.adminKey });
      if (res.status === 429) refused = res;
      else {
        expect(res.status, JSON.stringify(res.body)).to.equal(200);
        served++;
      }
    }
    expect(refused, 'refused within 5,000 searches').to.not.equal(undefined);
    // A fresh bucket lets the first in whatever it costs (on a loaded machine one search may take the 20 ms).
    expect(served, 'the first search is let in').to.be.at.least(1);
    const res = refused as Awaited<ReturnType<typeof api>>;
    const retryAfter = Number(res.headers.get('Retry-After'));
    // A millisecond back takes 10 s at this rate.
    expect(retryAfter, `Retry-After ${res.headers.get('Retry-After')}`).to.be.at.least(10);
    expect(res.body).to.deep.equal({ success: false, error: `Too much searching: this key has used its search time for now; try again in ${retryAfter} s` });
    // The request quota's fields stay what they are: they count requests, not milliseconds.
    expect(res.headers.get('RateLimit-Limit')).to.equal('6000');
    expect((await api(`${server.url}${LIST}`, { key: server.adminKey })).status, 'a list by the same key').to.equal(200);
    expect((await api(`${server.url}${SEARCH}?q=plum`, { key: other })).status, 'a search by another key').to.equal(200);
  });

  it('the MCP search tool draws on the same time: a tool error that says when', async () => {
    // The key spent its time over REST: the tool is refused at once (or after the one search a refill lets in),
    // where a bucket of its own would take tens of calls.
    let refusal: { isError?: boolean; content: Array<{ text: string }> } | undefined;
    for (let i = 0; i < 3 && !refusal; i++) {
      const result = await mcpSearch(server.adminKey);
      if (result.isError) refusal = result;
    }
    expect(refusal, 'refused within 3 calls').to.not.equal(undefined);
    expect(refusal?.content[0]?.text).to.match(/^Too much searching: this key has used its search time for now; try again in \d+ s$/);
  });

  it('a key out of search time still gets its 400 for a bad query (REST) and the input error (MCP), not a 429', async () => {
    // The admin key spent its time in the tests above: a good query is refused (after at most the one a refill lets in).
    let status = 0;
    for (let i = 0; i < 3 && status !== 429; i++) status = (await api(`${server.url}${SEARCH}?q=plum`, { key: server.adminKey })).status;
    expect(status, 'the key is out of search time').to.equal(429);
    for (const [q, error] of [
      ['%22open', /quote/i],
      ['-plum', /exclu/i],
    ] as const) {
      const res = await api(`${server.url}${SEARCH}?q=${q}`, { key: server.adminKey });
      expect(res.status, `q=${q}: ${JSON.stringify(res.body)}`).to.equal(400);
      expect((res.body as { error: string }).error).to.match(error);
    }
    const bad = await api(`${server.url}${SEARCH}?q=plum&limit=1000`, { key: server.adminKey });
    expect(bad.status, JSON.stringify(bad.body)).to.equal(400);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'search', arguments: { query: '"open' } } });
    const res = await fetch(`${server.url}/mcp`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Authorization: `Bearer ${server.adminKey}` },
      body,
    });
    const result = ((await res.json()) as { result: { isError?: boolean; content: Array<{ text: string }> } }).result;
    expect(result.isError).to.equal(true);
    expect(result.content[0]?.text).to.match(/quote/i).and.not.match(/Too much searching/);
  });

  it('GET /metrics counts the refusals (REST and MCP alike), and only those', async () => {
    const scrape = async (): Promise<number> => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      return Number(/^knowledge_search_time_refusals_total (\d+)$/m.exec(text)?.[1] ?? NaN);
    };
    const before = await scrape();
    // The two tests above were refused at least once each.
    expect(before).to.be.at.least(2);
    // The spent key's next search is refused (allowing for the one a refill may let in), and counted once.
    let status = 0;
    for (let i = 0; i < 3 && status !== 429; i++) status = (await api(`${server.url}${SEARCH}?q=plum`, { key: server.adminKey })).status;
    expect(status).to.equal(429);
    expect(await scrape()).to.equal(before + 1);
    // Another key's answered search and a 400 are not refusals of search time. The answered one by a key of its own,
    // whose fresh bucket lets its first search in whatever it costs: `other` may have spent its 20 ms already on a
    // loaded machine (its searches above). The 400 too, though a key in debt gets its 400 as well (the test above).
    const [answered, badQuery] = [await server.key('reader'), await server.key('reader')];
    expect((await api(`${server.url}${SEARCH}?q=plum`, { key: answered })).status).to.equal(200);
    expect((await api(`${server.url}${SEARCH}?q=%22open`, { key: badQuery })).status).to.equal(400);
    expect(await scrape()).to.equal(before + 1);
  });

  it('GET /metrics adds each answered search\'s own time to knowledge_search_query_seconds_total, never its refusals\'', async () => {
    const scrape = async (): Promise<{ query: number; total: number }> => {
      const text = await (await fetch(`${server.url}/metrics`)).text();
      const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
      return { query: value('knowledge_search_query_seconds_total'), total: value('knowledge_search_duration_seconds_sum') };
    };
    const fresh = await server.key('reader');
    const before = await scrape();
    for (let i = 0; i < 3; i++) expect((await api(`${server.url}${SEARCH}?q=plum`, { key: fresh })).status).to.equal(200);
    const after = await scrape();
    expect(after.query).to.be.greaterThan(before.query);
    // Its own time only: never more than the histogram's, which counts the waits too.
    expect(after.query - before.query).to.be.at.most(after.total - before.total + 1e-9);
    expect((await api(`${server.url}${SEARCH}?q=%22open`, { key: fresh })).status).to.equal(400);
    expect((await scrape()).query).to.equal(after.query);
  });

  it('a query refused as bad input costs no search time', async () => {
    // The rule is the unit test's (a failed search is charged nothing); end to end, 400 refusals leave the key's
    // search time whole.
    const fresh = await server.key('reader');
    for (let i = 0; i < 400; i++) expect((await api(`${server.url}${SEARCH}?q=%22open`, { key: fresh })).status).to.equal(400);
    expect((await api(`${server.url}${SEARCH}?q=plum`, { key: fresh })).status).to.equal(200);
  });
});
