import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { StringDecoder } from 'node:string_decoder';
import { expect } from 'chai';
import { ensureBuilt, killAllChildren, spawnServe, type ServeChild } from '../support/child.js';
import { commitCount } from '../support/git.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { sleep } from '../support/sleep.js';
import { tmpDir } from '../support/tmp.js';
import { bulkContent, bulkPath, writeBulkItems } from './bulkItems.js';
import { rawExchange, type RawResponse } from './rawHttp.js';

/**
 * Abusive clients (see README, Reliability): bodies over the limit are refused before they are read whole;
 * deeply nested JSON, oversized headers and query strings get a clear 4xx; slow clients (slowloris)
 * cannot stop others being served; 1,000 concurrent connections are all answered; memory stays
 * bounded while listing many large items.
 *
 * `ABUSE_FULL=1` lists 10,000 items of 100 KB (1 GB of content); the default lists 2,000.
 */

const FULL = process.env.ABUSE_FULL === '1';
const LIST = '/api/v1/knowledge';
const TOO_LARGE = { success: false, error: 'Content too large' };

function expectEnvelope(res: RawResponse, statuses: number[]): void {
  expect(statuses, `status ${res.status}: ${res.body}`).to.include(res.status);
  expect(res.headers['content-type']).to.match(/^application\/json/);
  const body = JSON.parse(res.body) as { success: boolean; error: string };
  expect(body.success).to.equal(false);
  expect(body.error).to.be.a('string').and.not.equal('');
}

describe('Abuse: bad requests', () => {
  let server: TestServer;
  let commitsBefore: number;
  // Body limit: the content limit (1 MiB by default) plus 64 KiB for the other fields.
  const BODY_LIMIT = 1_048_576 + 64 * 1024;

  before(async () => {
    server = await startTestServer();
    expect((await api(`${server.url}${LIST}/items/seed.md`, { method: 'PUT', key: server.adminKey, body: { content: 'seed' } })).status).to.equal(200);
    commitsBefore = await commitCount(server.gitdir());
  });
  after(() => server?.close());

  const putHead = (extra: string): string =>
    `PUT ${LIST}/items/big.md HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${server.adminKey}\r\nContent-Type: application/json\r\n${extra}\r\n`;

  it('a Content-Length over the limit is refused (413) before any of the body is sent, and the connection closed', async () => {
    const exchange = rawExchange(server.url, (socket) => void socket.write(putHead(`Content-Length: ${50 * 1024 * 1024}\r\n`)));
    const res = await exchange.response;
    expect(res.status).to.equal(413);
    expect(JSON.parse(res.body)).to.deep.equal(TOO_LARGE);
    expect(res.ms, 'answered at once, without waiting for the body').to.be.below(2000);
    expect(res.headers.connection).to.equal('close');
    await Promise.race([exchange.closed, sleep(3000).then(() => Promise.reject(new Error('the server kept the connection open')))]);
  });

  it('a chunked body over the limit is refused while it is being sent', async () => {
    const CHUNK = 64 * 1024;
    const MAX = 64 * 1024 * 1024;
    let sent = 0;
    const exchange = rawExchange(server.url, async (socket, answered) => {
      socket.write(putHead('Transfer-Encoding: chunked\r\n'));
      const first = '{"content":"';
      socket.write(`${first.length.toString(16)}\r\n${first}\r\n`);
      const chunk = `${CHUNK.toString(16)}\r\n${'x'.repeat(CHUNK)}\r\n`;
      while (!answered() && !socket.destroyed && sent < MAX) {
        sent += CHUNK;
        if (!socket.write(chunk)) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), sleep(50)]);
      }
    }, 30_000);
    const res = await exchange.response;
    expect(res.status).to.equal(413);
    expect(JSON.parse(res.body)).to.deep.equal(TOO_LARGE);
    console.log(`      chunked body: refused after ${(sent / 1024 / 1024).toFixed(1)} MB sent (limit ${(BODY_LIMIT / 1024 / 1024).toFixed(2)} MB)`);
    // Refused soon after the limit; what was sent beyond it sat in socket buffers.
    expect(sent, `${sent} bytes sent before the refusal`).to.be.above(BODY_LIMIT - CHUNK).and.below(MAX);
    exchange.socket.destroy();
  });

  it('JSON nested 100,000 levels deep is a quick 400, in any field', async () => {
    const deep = {
      arrays: `{"content":${'['.repeat(100_000)}${']'.repeat(100_000)}}`,
      objects: `{"content":"x","message":${'{"a":'.repeat(100_000)}1${'}'.repeat(100_000)}}`,
      unknownField: `{"content":"x","extra":${'['.repeat(400_000)}${']'.repeat(400_000)}}`,
      unclosed: `{"content":${'['.repeat(500_000)}`,
    };
    for (const [name, body] of Object.entries(deep)) {
      const started = Date.now();
      const res = await api(`${server.url}${LIST}/items/deep.md`, { method: 'PUT', key: server.adminKey, body, headers: { 'Content-Type': 'application/json' } });
      expect(res.status, `${name}: ${JSON.stringify(res.body)}`).to.equal(400);
      expect(res.body?.success).to.equal(false);
      expect(Date.now() - started, name).to.be.below(2000);
    }
  });

  it('20 KB of request headers -> 431 with the JSON envelope', async () => {
    const res = await rawExchange(server.url, (socket) =>
      void socket.write(`GET ${LIST} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${server.adminKey}\r\nX-Pad: ${'a'.repeat(20 * 1024)}\r\n\r\n`),
    ).response;
    expectEnvelope(res, [431]);
  });

  it('many small headers adding up to 20 KB -> 431 as well', async () => {
    const headers = Array.from({ length: 400 }, (_, i) => `X-H${i}: ${'b'.repeat(45)}\r\n`).join('');
    const res = await rawExchange(server.url, (socket) => void socket.write(`GET ${LIST} HTTP/1.1\r\nHost: localhost\r\n${headers}\r\n`)).response;
    expectEnvelope(res, [431]);
  });

  it('a 100 KB query string -> 414 or 431 with the JSON envelope', async () => {
    const res = await rawExchange(server.url, (socket) =>
      void socket.write(`GET ${LIST}?prefix=${'a'.repeat(100 * 1024)} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${server.adminKey}\r\n\r\n`),
    ).response;
    expectEnvelope(res, [414, 431]);
  });

  it('none of it changed anything, and the server still serves', async () => {
    expect(await commitCount(server.gitdir())).to.equal(commitsBefore);
    const res = await api(`${server.url}${LIST}`, { key: server.adminKey });
    expect(res.status).to.equal(200);
    expect((res.body?.data?.items as { path: string }[]).map((i) => i.path)).to.deep.equal(['seed.md']);
  });
});

/** One GET on `agent`; resolves with the status and the socket it went over. */
function getOver(agent: http.Agent, url: string, key: string): Promise<{ status: number; socket: object }> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent, headers: { Authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, socket: req.socket as object }));
    });
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EMFILE') reject(new Error(`the test client ran out of file descriptors (EMFILE): raise ulimit -n (now it allows fewer than needed)`));
      else reject(err);
    });
  });
}

describe('Abuse: slow and many clients', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer();
    expect((await api(`${server.url}${LIST}/items/a.md`, { method: 'PUT', key: server.adminKey, body: { content: 'a' } })).status).to.equal(200);
  });
  after(() => server?.close());

  it('200 clients sending headers one byte a second do not stop others being served, and are dropped after 15 s', async function () {
    this.timeout(45_000);
    const SLOW = 200;
    const started = Date.now();
    const slow = Array.from({ length: SLOW }, () =>
      rawExchange(
        server.url,
        async (socket) => {
          const request = `GET ${LIST} HTTP/1.1\r\nHost: localhost\r\nX-Slow: ${'s'.repeat(64)}\r\n`;
          for (const byte of request) {
            if (socket.destroyed) return;
            socket.write(byte);
            await sleep(1000);
          }
        },
        30_000,
      ),
    );
    let dropped = 0;
    for (const s of slow) void s.closed.then(() => dropped++);
    const latencies: number[] = [];
    // A normal client goes on asking (a new connection now and then, too) until every slow client is gone.
    while (dropped < SLOW && Date.now() - started < 25_000) {
      const t = Date.now();
      const res = await api(`${server.url}${LIST}`, { key: server.adminKey, headers: latencies.length % 5 === 0 ? { Connection: 'close' } : {} });
      latencies.push(Date.now() - t);
      expect(res.status).to.equal(200);
      await sleep(100);
    }
    const droppedAfter = Date.now() - started;
    const answers = await Promise.allSettled(slow.map((s) => s.response));
    const timeouts = answers.filter((a) => a.status === 'fulfilled' && a.value.status === 408).length;
    const worst = Math.max(...latencies);
    console.log(`      slowloris: ${latencies.length} normal requests, worst ${worst} ms; ${SLOW} slow clients dropped after ${droppedAfter} ms (${timeouts} with a 408)`);
    expect(dropped, 'slow clients dropped by the server').to.equal(SLOW);
    expect(droppedAfter, 'dropped soon after the 15 s headers timeout').to.be.below(20_000);
    expect(timeouts, 'each slow client told 408 before being dropped').to.equal(SLOW);
    expect(worst, 'every normal request answered within 1 s').to.be.below(1000);
  });

  it('1,000 concurrent keep-alive connections, each doing a GET, are all answered', async function () {
    this.timeout(60_000);
    const N = 1000;
    const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity });
    try {
      const started = Date.now();
      const results = await Promise.all(Array.from({ length: N }, () => getOver(agent, `${server.url}${LIST}/items/a.md`, server.adminKey)));
      const ms = Date.now() - started;
      const sockets = new Set(results.map((r) => r.socket));
      console.log(`      1,000 connections: ${sockets.size} sockets, all answered in ${ms} ms`);
      expect(results.every((r) => r.status === 200), `statuses: ${[...new Set(results.map((r) => r.status))].join(', ')}`).to.equal(true);
      expect(sockets.size, 'connections open at once').to.equal(N);
      // ...and they are still usable: a second round over the same connections.
      const again = await Promise.all(Array.from({ length: N }, () => getOver(agent, `${server.url}${LIST}/items/a.md`, server.adminKey)));
      expect(again.every((r) => r.status === 200)).to.equal(true);
    } finally {
      agent.destroy();
    }
  });
});

/** Resident memory of a process, in bytes (Linux). */
async function rssOf(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmRSS:\s+(\d+) kB$/m.exec(status)?.[1];
  if (!kb) throw new Error(`no VmRSS for ${pid}`);
  return Number(kb) * 1024;
}

/**
 * Checks the list body as it arrives, without holding it: the envelope's opening, then each item
 * (a `},{"id":"` cannot occur inside a JSON string, where the quote would be escaped), then the end.
 */
class ListChecker {
  private text = '';
  private opened = false;
  count = 0;
  constructor(private readonly bytes: number) {}

  feed(piece: string): void {
    this.text += piece;
    if (!this.opened) {
      const head = '{"success":true,"data":{"items":[';
      if (this.text.length < head.length) return;
      expect(this.text.slice(0, head.length)).to.equal(head);
      this.text = this.text.slice(head.length);
      this.opened = true;
    }
    for (let at = this.text.indexOf('},{"id":"'); at !== -1; at = this.text.indexOf('},{"id":"')) {
      this.item(this.text.slice(0, at + 1));
      this.text = this.text.slice(at + 2);
    }
  }

  end(): void {
    expect(this.opened, 'envelope opened').to.equal(true);
    expect(this.text.endsWith(']}}'), `ends with ]}} (${this.text.slice(-40)})`).to.equal(true);
    const last = this.text.slice(0, -3);
    if (last) this.item(last);
  }

  private item(json: string): void {
    const item = JSON.parse(json) as { path: string; content: string };
    expect(item.path).to.equal(bulkPath(this.count));
    expect(item.content === bulkContent(this.count, this.bytes), `content of ${item.path}`).to.equal(true);
    this.count++;
  }
}

describe(`Abuse: memory while listing ${FULL ? '10,000' : '2,000'} items of 100 KB (child server)`, function () {
  const COUNT = FULL ? 10_000 : 2_000;
  const BYTES = 100_000;
  // What the server may grow by while it streams the list, however long: what stays (its content
  // cache of 64 MB weight, a few items read ahead, socket buffers: some 60 MB) plus the garbage V8
  // lets pile up between two full collections (some 170 MB here; RSS is a saw-tooth, not a ramp).
  // Building the list whole, as before, grew it by 980 MB for 2,000 items (5 times their content),
  // and by 2 GB for 10,000 before failing to answer at all.
  const BOUND_MB = 320;
  let tmp: { dir: string; cleanup: () => Promise<void> };
  let child: ServeChild | undefined;
  let adminKey: string;

  before(async function () {
    this.timeout(FULL ? 600_000 : 120_000);
    await ensureBuilt();
    tmp = await tmpDir('ks-abuse-list');
    const made = await writeBulkItems({ dataDir: tmp.dir, count: COUNT, bytes: BYTES });
    adminKey = made.adminKey;
    console.log(`      generated ${COUNT} items of ${BYTES} bytes in ${made.ms} ms`);
    child = await spawnServe(tmp.dir, 60_000);
  });
  after(async () => {
    await child?.kill();
    await killAllChildren();
    await tmp?.cleanup();
  });

  it(`streams the whole list to a slow reader with the server's RSS growing less than ${BOUND_MB} MB; the JSON is complete`, async function () {
    this.timeout(FULL ? 600_000 : 90_000);
    const server = child as ServeChild;
    // Warm up: the organization is opened, the first request's allocations made.
    const warm = await api(`${server.url}${LIST}?content=false&limit=10`, { key: adminKey });
    expect(warm.status).to.equal(200);
    await sleep(500);
    const baseline = await rssOf(server.pid);
    let peak = baseline;
    const sampler = setInterval(() => {
      rssOf(server.pid).then(
        (rss) => (peak = Math.max(peak, rss)),
        () => undefined,
      );
    }, 50);
    const checker = new ListChecker(BYTES);
    let received = 0;
    const started = Date.now();
    try {
      await new Promise<void>((resolve, reject) => {
        const req = http.get(`${server.url}${LIST}`, { headers: { Authorization: `Bearer ${adminKey}` } }, (res) => {
          if (res.statusCode !== 200 || res.headers['content-type'] !== 'application/json; charset=utf-8') {
            reject(new Error(`list answered ${res.statusCode} ${res.headers['content-type']}`));
            return;
          }
          const decoder = new StringDecoder('utf8');
          // A slow reader: nothing for 2 s (the server must wait, not build ahead), then a pause after every piece.
          res.pause();
          setTimeout(() => res.resume(), 2000);
          res.on('data', (chunk: Buffer) => {
            received += chunk.length;
            try {
              checker.feed(decoder.write(chunk));
            } catch (err) {
              req.destroy();
              reject(err);
              return;
            }
            res.pause();
            setTimeout(() => res.resume(), 1);
          });
          res.on('end', () => {
            try {
              checker.feed(decoder.end());
              checker.end();
              resolve();
            } catch (err) {
              reject(err);
            }
          });
          res.on('error', reject);
        });
        req.on('error', reject);
      });
    } finally {
      clearInterval(sampler);
    }
    const growth = peak - baseline;
    const mb = (n: number): string => (n / 1024 / 1024).toFixed(0);
    console.log(
      `      listed ${checker.count} items, ${mb(received)} MB in ${Date.now() - started} ms; server RSS ${mb(baseline)} MB -> peak ${mb(peak)} MB (+${mb(growth)} MB)`,
    );
    expect(checker.count).to.equal(COUNT);
    expect(growth, `RSS growth ${mb(growth)} MB`).to.be.below(BOUND_MB * 1024 * 1024);
  });

  it('readers that go away mid-list cost nothing lasting: the server goes on serving', async function () {
    this.timeout(60_000);
    const server = child as ServeChild;
    const abandon = (): Promise<void> =>
      new Promise<void>((resolve, reject) => {
        const req = http.get(`${server.url}${LIST}`, { headers: { Authorization: `Bearer ${adminKey}` } }, (res) => {
          let got = 0;
          res.on('data', (chunk: Buffer) => {
            got += chunk.length;
            if (got > 5 * 1024 * 1024) {
              req.destroy();
              resolve();
            }
          });
          res.on('error', () => undefined);
        });
        req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
      });
    await Promise.all(Array.from({ length: 20 }, abandon));
    const res = await api(`${server.url}${LIST}?limit=3`, { key: adminKey });
    expect(res.status).to.equal(200);
    expect((res.body?.data?.items as { path: string }[]).map((i) => i.path)).to.deep.equal([0, 1, 2].map(bulkPath));
    expect(server.stderr()).to.not.match(/list failed|error/i);
  });
});
