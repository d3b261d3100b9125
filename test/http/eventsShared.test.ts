import net from 'node:net';
import { expect } from 'chai';
import { createKey } from '../../src/domain/keys.js';
import { EVENT_STREAM_DEFAULTS } from '../../src/http/events/streamLimits.js';
import { SseClient } from '../support/sse.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { head, urlOf } from './adminApi.js';
import { keyStoreOf, put } from './helpers.js';

/**
 * The fan-out's sharing (src/http/events/eventChunks.ts): streams at the same commit that see alike write one
 * shared turn; streams with other scopes, at other cursors, or with bytes still queued walk apart. Whatever
 * is shared, each stream must get exactly its own events, in order, with no gap and no duplicate.
 */
describe('HTTP events: streams sharing a wake-up', function () {
  this.timeout(120_000);

  let server: TestServer;
  const clients: SseClient[] = [];
  const open = async (key: string, query = ''): Promise<SseClient> => {
    const client = await SseClient.open(urlOf(server, `/events${query}`), { Authorization: `Bearer ${key}` });
    clients.push(client);
    return client;
  };
  /** What a stream from `since` must get: the change feed since then, one event per commit (every change here creates an item). */
  const expectedSince = async (key: string, since: string): Promise<Array<{ id: string; paths: string[] }>> => {
    const changes = ((await api(urlOf(server, `/changes?since=${since}`), { key })).body?.data as { changes: Array<{ commitId: string; path: string; change: string }> }).changes;
    const out: Array<{ id: string; paths: string[] }> = [];
    for (const c of changes) {
      expect(c.change).to.equal('created');
      if (out.at(-1)?.id !== c.commitId) out.push({ id: c.commitId, paths: [] });
      out.at(-1)?.paths.push(c.path);
    }
    return out;
  };
  const got = (client: SseClient): Array<{ id: string; paths: string[] }> => client.commits().map((e) => ({ id: e.id as string, paths: e.data.changes.map((c) => c.path) }));

  before(async () => {
    server = await startTestServer({ config: { eventStreams: { ...EVENT_STREAM_DEFAULTS, streamsPerKey: 20, streamsPerOrg: 1000, heartbeatMs: 15_000, bufferBytes: 64 * 1024, slowReaderMs: 20_000 } } });
  });
  afterEach(() => clients.splice(0).forEach((c) => c.close()));
  after(async () => server?.close());

  // Streams alike at different commits in one wake-up (woken in different turns of the event loop) are covered
  // deterministically by test/http/eventChunks.test.ts; here the whole path, over HTTP, through a burst.
  it('streams with other scopes, at other cursors, each get exactly their events through a burst of concurrent writes', async () => {
    const admin = server.adminKey;
    const scoped = (await createKey({ keys: keyStoreOf(server), orgId: 'default', role: 'reader', name: 'scoped', scopes: ['a/'] })).secret;
    expect((await put(server, admin, 'a/first.md', { content: 'x' })).status).to.equal(200);
    expect((await put(server, admin, 'b/first.md', { content: 'x' })).status).to.equal(200);
    const older = await head(server);
    expect((await put(server, admin, 'a/second.md', { content: 'x' })).status).to.equal(200);
    expect((await put(server, admin, 'b/second.md', { content: 'x' })).status).to.equal(200);
    const now = await head(server);
    const streams = {
      adminNow: await Promise.all([1, 2, 3].map(() => open(admin))),
      scopedNow: await Promise.all([1, 2].map(() => open(scoped))),
      adminOlder: await Promise.all([1, 2].map(() => open(admin, `?since=${older}`))),
      scopedOlder: await Promise.all([1, 2].map(() => open(scoped, `?since=${older}`))),
    };
    // Concurrent writers: commits grouped into batches, several per wake-up, while the streams are at different commits.
    const results = await Promise.all(Array.from({ length: 40 }, (_, i) => put(server, admin, `${i % 2 ? 'a' : 'b'}/burst-${i}.md`, { content: `${i}` })));
    results.forEach((r) => expect(r.status).to.equal(200));
    const want = {
      adminNow: await expectedSince(admin, now),
      scopedNow: await expectedSince(scoped, now),
      adminOlder: await expectedSince(admin, older),
      scopedOlder: await expectedSince(scoped, older),
    };
    expect(want.adminNow.length).to.be.greaterThan(want.scopedNow.length);
    expect(want.scopedNow.every((e) => e.paths.every((p) => p.startsWith('a/')))).to.equal(true);
    expect(want.scopedOlder.length).to.equal(want.scopedNow.length + 1);
    for (const [name, group] of Object.entries(streams)) {
      const expected = want[name as keyof typeof want];
      for (const client of group) {
        await client.waitFor(expected.length);
        // A duplicate or a late extra event would come right after: give it the time to.
        await new Promise((r) => setTimeout(r, 300));
        expect(got(client), name).to.deep.equal(expected);
      }
    }
  });

  it('a stream whose client stops reading a while walks alone and catches up with no gap and no duplicate, beside one that keeps up', async () => {
    const admin = server.adminKey;
    const since = await head(server);
    const fast = await open(admin);
    const paused = await open(admin);
    paused.res?.pause();
    // ~330 KB per commit: the paused stream's socket fills, bytes stay queued, and its turns are its own (room < bufferBytes).
    const COMMITS = 12;
    for (let round = 0; round < COMMITS; round++) {
      const operations = Array.from({ length: 1000 }, (_, i) => ({ op: 'put', path: `big/${'x'.repeat(200)}-${round}-${i}.md`, content: `${round}` }));
      const res = await api(urlOf(server, '/commits'), { method: 'POST', key: admin, body: { operations } });
      expect(res.status).to.equal(200);
    }
    await fast.waitFor(COMMITS, 60_000);
    // Still behind: the paused client has not had every event (else this test would not test the slow path).
    expect(paused.commits().length).to.be.lessThan(COMMITS);
    paused.res?.resume();
    await paused.waitFor(COMMITS, 60_000);
    await new Promise((r) => setTimeout(r, 300));
    const ids = (c: SseClient): string[] => c.commits().map((e) => e.id as string);
    expect(ids(fast)).to.have.length(COMMITS);
    expect(ids(paused)).to.deep.equal(ids(fast));
    expect(paused.events.some((e) => e.event === 'end')).to.equal(false);
    const all = ((await api(urlOf(server, `/changes?since=${since}`), { key: admin })).body?.data as { changes: Array<{ commitId: string }> }).changes;
    expect(ids(fast)).to.deep.equal([...new Set(all.map((c) => c.commitId))]);
  });

  it('an HTTP/1.0 client (no chunked encoding) gets the same events, unframed', async () => {
    const admin = server.adminKey;
    const { hostname, port, pathname } = new URL(urlOf(server, '/events'));
    const socket = net.connect(Number(port), hostname);
    let raw = '';
    socket.setEncoding('utf8').on('data', (d: string) => (raw += d));
    socket.write(`GET ${pathname} HTTP/1.0\r\nHost: ${hostname}\r\nAuthorization: Bearer ${admin}\r\n\r\n`);
    const until = async (ok: () => boolean): Promise<void> => {
      for (const deadline = Date.now() + 10_000; !ok(); await new Promise((r) => setTimeout(r, 20))) if (Date.now() > deadline) throw new Error(`timed out; got ${raw}`);
    };
    try {
      await until(() => raw.includes(': connected'));
      // Alongside a chunked stream, so that the turn is shared (and framed) for one and written as is for the other.
      const chunked = await open(admin);
      expect((await put(server, admin, 'http10/a.md', { content: 'a' })).status).to.equal(200);
      const commit = await head(server);
      await chunked.waitFor(1);
      // The whole event: its id line, then the blank line that ends it.
      await until(() => raw.includes(`id: ${commit}\n`) && raw.endsWith('\n\n'));
      expect(raw).to.match(/^HTTP\/1\.1 200 /);
      expect(raw.toLowerCase()).to.not.include('transfer-encoding: chunked');
      const body = raw.slice(raw.indexOf('\r\n\r\n') + 4);
      expect(body).to.equal(`retry: 2000\n: connected\n\nid: ${commit}\ndata: ${chunked.events[0]?.data}\n\n`);
    } finally {
      socket.destroy();
    }
  });
});

