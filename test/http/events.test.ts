import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { EVENT_STREAM_DEFAULTS } from '../../src/http/events/streamLimits.js';
import { SseClient } from '../support/sse.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { head, urlOf } from './adminApi.js';
import { createKeyWithId, del, itemOf, put, revoke } from './helpers.js';

const EVENTS = '/events';

function open(server: TestServer, key: string, query = '', headers: Record<string, string> = {}, options: { paused?: boolean } = {}): Promise<SseClient> {
  return SseClient.open(urlOf(server, `${EVENTS}${query}`), { Authorization: `Bearer ${key}`, ...headers }, options);
}

/** The most a TCP socket's send buffer grows to on this machine (Linux: tcp_wmem's third field), 4 MiB if unknown. */
async function largestSendBuffer(): Promise<number> {
  const wmem = await readFile('/proc/sys/net/ipv4/tcp_wmem', 'utf8').catch(() => '');
  const largest = Number(wmem.trim().split(/\s+/)[2]);
  return Number.isInteger(largest) && largest > 0 ? largest : 4 * 1024 * 1024;
}

/** [path, change] of each entry of each commit event. */
const pairs = (client: SseClient): Array<Array<[string, string]>> => client.commits().map((e) => e.data.changes.map((c) => [c.path, c.change]));

/** Waits until `client` has an event for commit `commitId` (the stream is fed after the PUT answered). */
async function waitForCommit(client: SseClient, commitId: string): Promise<void> {
  for (let n = 1; ; n++) {
    await client.waitFor(n);
    if (client.events[n - 1]?.id === commitId) return;
  }
}

describe('HTTP events: GET /events (Server-Sent Events)', function () {
  this.timeout(60_000);

  let server: TestServer;
  let admin: string;
  let reader: string;
  const clients: SseClient[] = [];
  const track = async (client: Promise<SseClient>): Promise<SseClient> => {
    const c = await client;
    clients.push(c);
    return c;
  };

  before(async () => {
    server = await startTestServer({ config: { eventStreams: { ...EVENT_STREAM_DEFAULTS, streamsPerKey: 3, streamsPerOrg: 1000, heartbeatMs: 200, bufferBytes: 64 * 1024, slowReaderMs: 500 } } });
    admin = server.adminKey;
    reader = await server.key('reader');
  });
  afterEach(() => clients.splice(0).forEach((c) => c.close()));
  after(async () => server?.close());

  it('sends one event per commit, id = commit id, data = the change feed entries of that commit', async () => {
    // A client that accepts compression still gets the stream as it is: compressed, events would wait in the compressor.
    const client = await track(open(server, admin, '', { 'Accept-Encoding': 'gzip, br' }));
    expect(client.status).to.equal(200);
    expect(client.headers['content-type']).to.match(/^text\/event-stream/);
    expect(client.headers['content-encoding']).to.equal(undefined);
    const created = itemOf(await put(server, admin, 'ev/a.md', { content: 'one' }));
    const c1 = await head(server);
    await put(server, admin, 'ev/a.md', { content: 'two' });
    const c2 = await head(server);
    expect((await del(server, admin, 'ev/a.md')).status).to.equal(200);
    const c3 = await head(server);
    await client.waitFor(3);
    expect(client.events.map((e) => e.id)).to.deep.equal([c1, c2, c3]);
    expect(pairs(client)).to.deep.equal([[['ev/a.md', 'created']], [['ev/a.md', 'updated']], [['ev/a.md', 'deleted']]]);
    const first = client.commits()[0]?.data as unknown as { organizationId: string; commitId: string; timestamp: string; changes: Array<Record<string, unknown>> };
    expect(first.organizationId).to.equal('default');
    expect(first.commitId).to.equal(c1);
    expect(first.changes[0]).to.include({ id: created.id, commitId: c1 });
    // The same entries the change feed gives for that commit.
    const feed = await api(urlOf(server, `/changes?since=${c1}`), { key: admin });
    expect((feed.body?.data as { changes: unknown[] }).changes[0]).to.deep.equal(client.commits()[2]?.data.changes[0]);
  });

  it('resumes with Last-Event-ID (and ?since=) with no gap and no duplicate', async () => {
    const first = await track(open(server, admin));
    const ids: string[] = [];
    for (const n of [1, 2]) {
      await put(server, admin, `resume/${n}.md`, { content: `v${n}` });
      ids.push(await head(server));
    }
    await first.waitFor(2);
    first.close();
    // Written while nobody listens.
    for (const n of [3, 4, 5]) {
      await put(server, admin, `resume/${n}.md`, { content: `v${n}` });
      ids.push(await head(server));
    }
    const again = await track(open(server, admin, '', { 'Last-Event-ID': ids[1] as string }));
    await again.waitFor(3);
    expect(again.events.map((e) => e.id)).to.deep.equal(ids.slice(2));
    // The header wins over the URL's `since` (EventSource keeps the URL and sends the header on reconnect).
    const both = await track(open(server, admin, `?since=${ids[0] as string}`, { 'Last-Event-ID': ids[3] as string }));
    await both.waitFor(1);
    const bySince = await track(open(server, admin, `?since=${ids[0] as string}`));
    await bySince.waitFor(4);
    expect(bySince.events.map((e) => e.id)).to.deep.equal(ids.slice(1));
    await new Promise((r) => setTimeout(r, 300));
    expect(both.events.map((e) => e.id)).to.deep.equal(ids.slice(4));
    expect(bySince.events).to.have.length(4);
  });

  it('shows a reader only what it may read, and skips commits it may see nothing of', async () => {
    const client = await track(open(server, reader));
    const adminOnly = await track(open(server, admin));
    await put(server, admin, 'secret/s.md', { content: 'hidden', requiredReadPermission: 'knowledge:admin' });
    const hidden = await head(server);
    await put(server, admin, 'open/o.md', { content: 'public' });
    const visible = await head(server);
    // One commit holding both: the reader gets only its own entry.
    const both = await api(urlOf(server, '/commits'), {
      method: 'POST',
      key: admin,
      body: { operations: [{ op: 'put', path: 'secret/s.md', content: 'hidden 2' }, { op: 'put', path: 'open/o.md', content: 'public 2' }] },
    });
    expect(both.status, JSON.stringify(both.body)).to.equal(200);
    const mixed = await head(server);
    await adminOnly.waitFor(3);
    await client.waitFor(2);
    expect(client.events.map((e) => e.id)).to.deep.equal([visible, mixed]);
    expect(client.events.map((e) => e.id)).to.not.include(hidden);
    expect(pairs(client)).to.deep.equal([[['open/o.md', 'created']], [['open/o.md', 'updated']]]);
    expect(pairs(adminOnly)[2]).to.deep.equal([
      ['secret/s.md', 'updated'],
      ['open/o.md', 'updated'],
    ]);
    // Hiding an item from readers is a "deleted" for them, as in the change feed.
    await put(server, admin, 'open/o.md', { content: 'public 2', requiredReadPermission: 'knowledge:admin' });
    await client.waitFor(3);
    expect(pairs(client)[2]).to.deep.equal([['open/o.md', 'deleted']]);
  });

  it('keeps an idle stream open with heartbeat comments', async () => {
    const client = await track(open(server, reader));
    const before = client.comments;
    await new Promise((r) => setTimeout(r, 700));
    expect(client.comments - before).to.be.at.least(2);
    expect(client.ended).to.equal(false);
  });

  it('refuses bad input and bad keys with JSON before any stream starts', async () => {
    const unknown = await track(open(server, admin, '', { 'Last-Event-ID': 'f'.repeat(40) }));
    expect(unknown.status).to.equal(400);
    await unknown.waitForEnd();
    expect(JSON.parse(unknown.body)).to.deep.equal({ success: false, error: 'since must be the full id of a commit of this organization' });
    const badQuery = await track(open(server, admin, '?since=abc'));
    expect(badQuery.status).to.equal(400);
    const extra = await track(open(server, admin, '?prefix=a/'));
    expect(extra.status).to.equal(400);
    const noKey = await track(SseClient.open(urlOf(server, EVENTS)));
    expect(noKey.status).to.equal(401);
    // HEAD answers with the headers and holds nothing open.
    for (let i = 0; i < 5; i++) {
      const headRes = await fetch(urlOf(server, EVENTS), { method: 'HEAD', headers: { Authorization: `Bearer ${reader}` } });
      expect(headRes.status).to.equal(200); // never 429: no stream was counted
      expect(headRes.headers.get('content-type')).to.match(/^text\/event-stream/);
    }
  });

  it('holds at most N streams per key (429 past it) and frees a slot when a client goes', async () => {
    const writer = await server.key('writer');
    const open3 = await Promise.all([1, 2, 3].map(() => track(open(server, writer))));
    expect(open3.map((c) => c.status)).to.deep.equal([200, 200, 200]);
    const fourth = await track(open(server, writer));
    expect(fourth.status).to.equal(429);
    await fourth.waitForEnd();
    expect(JSON.parse(fourth.body).error).to.equal('Too many event streams: at most 3 per key; close one first');
    // Another key is counted apart.
    expect((await track(open(server, reader))).status).to.equal(200);
    open3[0]?.close();
    let fifth: SseClient | undefined;
    for (let i = 0; i < 50 && fifth?.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 20));
      fifth = await track(open(server, writer));
    }
    expect(fifth?.status).to.equal(200);
  });

  it('ends the stream of a key revoked while it listens', async () => {
    const { secret, id, keys } = await createKeyWithId(server, 'reader');
    const client = await track(open(server, secret));
    await revoke(keys, id);
    // The key store notices within a second; the stream looks at its key at the next commit or heartbeat.
    await client.waitForEnd();
    expect(client.events.at(-1)?.event).to.equal('end');
    expect(JSON.parse(client.events.at(-1)?.data as string).reason).to.equal('key-revoked');
    expect(client.commits()).to.have.length(0);
  });

  it('drops a client that stops reading with event: end, and it resumes from its last id', async function () {
    this.timeout(180_000);
    // Enough commits that their events cannot all sit in the sockets' buffers (~330 KB each): the server's send
    // buffer grows up to tcp_wmem's largest (4 MiB by default), the paused client's receive buffer stays small.
    const ROUNDS = Math.ceil((((await largestSendBuffer()) + 512 * 1024) * 1.5) / (330 * 1024));
    const since = await head(server);
    const operations = (round: number) =>
      Array.from({ length: 1000 }, (_, i) => ({ op: 'put', path: `slow/${'x'.repeat(200)}-${i}.md`, content: `round ${round}` }));
    for (let round = 0; round < ROUNDS; round++) {
      const res = await api(urlOf(server, '/commits'), { method: 'POST', key: admin, body: { operations: operations(round) } });
      expect(res.status).to.equal(200);
    }
    // A reader that keeps up gets them all (and the server has read each commit's facts once, for everyone).
    const fast = await track(open(server, admin, `?since=${since}`));
    await fast.waitFor(ROUNDS, 60_000);
    fast.close();
    // The slow stream on a key of its own, whose other two slots (streamsPerKey: 3) are held by readers that keep up.
    const own = await server.key('admin');
    const client = await track(open(server, own, `?since=${since}`, {}, { paused: true }));
    await track(open(server, own));
    await track(open(server, own));
    // The server stops walking once its buffer is full, waits slowReaderMs (500 ms) for the client, then ends the
    // stream. How long the walk takes to fill the buffer varies (the first commits' facts may be read from git
    // again: 21 commits of 1,000 items are more than the feed keeps): the client stays paused until the server has
    // ended its stream, which frees its slot. A fixed 2 s pause was too short on a slower run, and a stream resumed
    // before the buffer filled is never slow.
    const deadline = Date.now() + 60_000;
    for (;;) {
      const probe = await open(server, own);
      const status = probe.status;
      probe.close();
      if (status === 200) break;
      expect(status, 'a fourth stream of the key while its three are open').to.equal(429);
      if (Date.now() > deadline) throw new Error('the slow stream was not ended within 60 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    client.res?.resume();
    await client.waitForEnd(20_000);
    const last = client.events.at(-1);
    expect(last?.event).to.equal('end');
    const end = JSON.parse(last?.data as string) as { reason: string; lastEventId: string };
    expect(end.reason).to.equal('slow-reader');
    const got = client.commits();
    expect(got.length).to.be.lessThan(ROUNDS);
    expect(end.lastEventId).to.equal(got.at(-1)?.id);
    const rest = await track(open(server, admin, '', { 'Last-Event-ID': end.lastEventId }));
    await rest.waitFor(ROUNDS - got.length, 20_000);
    const all = [...got, ...rest.commits()].map((e) => e.id);
    expect(all).to.deep.equal(fast.commits().map((e) => e.id));
  });

  it('resumes across a server restart: the feed is computed from git history, not memory', async () => {
    const client = await track(open(server, admin));
    await put(server, admin, 'restart/a.md', { content: 'a' });
    const a = await head(server);
    await waitForCommit(client, a);
    await put(server, admin, 'restart/b.md', { content: 'b' });
    const b = await head(server);
    await waitForCommit(client, b);
    const { dataDir } = server;
    // A stop ends every stream at once with a last event saying so (a graceful stop does not wait for them).
    const stopping = Date.now();
    await server.server.close(10_000);
    expect(Date.now() - stopping).to.be.lessThan(5000);
    await client.waitForEnd();
    expect(client.events.at(-1)?.event).to.equal('end');
    expect(JSON.parse(client.events.at(-1)?.data as string)).to.deep.equal({ reason: 'server-stopping', lastEventId: b });
    const restarted = await startTestServer({ dataDir });
    try {
      await put(restarted, admin, 'restart/c.md', { content: 'c' });
      const c = await head(restarted);
      const resumed = await SseClient.open(urlOf(restarted, EVENTS), { Authorization: `Bearer ${admin}`, 'Last-Event-ID': a });
      clients.push(resumed);
      await resumed.waitFor(2);
      expect(resumed.events.map((e) => e.id)).to.deep.equal([b, c]);
    } finally {
      await restarted.close();
    }
  });
});

describe('HTTP events: each event is the change feed of its commit', function () {
  this.timeout(60_000);

  let server: TestServer;
  after(async () => server?.close());

  it('for every kind of commit and every role, event data = GET /changes?since=<parent> while it was the head', async () => {
    server = await startTestServer();
    const admin = server.adminKey;
    const roles = { admin, writer: await server.key('writer'), reader: await server.key('reader') };
    const streams = Object.fromEntries(await Promise.all(Object.entries(roles).map(async ([role, key]) => [role, await open(server, key)] as const)));
    const expected: Record<string, Array<{ id: string; changes: unknown[] }>> = { admin: [], writer: [], reader: [] };
    const start = await head(server);
    const send = (method: string, rest: string, body?: unknown) => api(urlOf(server, rest), { method, key: admin, ...(body === undefined ? {} : { body }) });
    const steps: Array<() => Promise<unknown>> = [
      () => put(server, admin, 'feed/a.md', { content: 'a' }),
      () => put(server, admin, 'feed/b.md', { content: 'b' }),
      () => put(server, admin, 'feed/a.md', { content: 'a2' }),
      () => put(server, admin, 'feed/a.md', { content: 'a2', requiredReadPermission: 'knowledge:write' }),
      () => send('POST', '/move', { from: 'feed/b.md', to: 'moved/b.md' }),
      () => send('PUT', '/folders/moved', { requiredReadPermission: 'knowledge:admin' }),
      () => send('PUT', '/folders/moved', { requiredReadPermission: 'inherit' }),
      () => del(server, admin, 'feed/a.md'),
      () => send('POST', '/trash/restore', { path: 'feed/a.md' }),
      () => del(server, admin, 'moved/b.md'),
      () => send('DELETE', '/trash/items/moved/b.md'),
      () =>
        send('POST', '/commits', {
          operations: [
            { op: 'put', path: 'feed/c.md', content: 'c', requiredReadPermission: 'knowledge:admin' },
            { op: 'put', path: 'feed/d.md', content: 'd' },
            { op: 'move', from: 'feed/a.md', to: 'feed/e.md' },
          ],
        }),
    ];
    for (const step of steps) {
      const parent = await head(server);
      const res = (await step()) as { status: number; body?: unknown };
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      const commit = await head(server);
      expect(commit).to.not.equal(parent);
      for (const [role, key] of Object.entries(roles)) {
        const feed = await api(urlOf(server, `/changes?since=${parent}`), { key });
        const changes = (feed.body?.data as { changes: unknown[] }).changes;
        if (changes.length > 0) expected[role]?.push({ id: commit, changes });
      }
    }
    for (const [role, stream] of Object.entries(streams)) {
      const want = expected[role] as Array<{ id: string; changes: unknown[] }>;
      await stream.waitFor(want.length);
      await new Promise((r) => setTimeout(r, 200));
      expect(stream.commits().map((e) => ({ id: e.id, changes: e.data.changes })), role).to.deep.equal(want);
      stream.close();
    }
    // The roles saw different things (the comparison above is not trivially the same list three times).
    expect(expected.reader).to.not.deep.equal(expected.admin);
    expect(expected.writer).to.not.deep.equal(expected.reader);
    // After a restart nothing is in memory: the same events again, read from git, for a client resuming from the start.
    const { dataDir } = server;
    await server.server.close(2000);
    const restarted = await startTestServer({ dataDir });
    try {
      for (const [role, key] of Object.entries(roles)) {
        const want = expected[role] as Array<{ id: string; changes: unknown[] }>;
        const again = await SseClient.open(urlOf(restarted, `${EVENTS}?since=${start}`), { Authorization: `Bearer ${key}` });
        await again.waitFor(want.length);
        await new Promise((r) => setTimeout(r, 200));
        expect(again.commits().map((e) => ({ id: e.id, changes: e.data.changes })), `${role} after a restart`).to.deep.equal(want);
        again.close();
      }
    } finally {
      await restarted.close();
    }
  });
});
