import { promises as nodeFs } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/app/config.js';
import { redactSecrets } from '../../src/common/redact.js';
import { createLogger } from '../../src/common/log.js';
import { requestIdOf } from '../../src/http/middleware/requestContext.js';
import { readinessCheck } from '../../src/http/routes/health.js';
import type { OrgStore } from '../../src/storage/repo/orgStore.js';
import { basicAuth, cloneUrl, gitOk } from '../git/support.js';
import { sleep } from '../support/sleep.js';
import { tmpDir } from '../support/tmp.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { expectError, ITEMS, LIST, put, UUID } from './helpers.js';

/** Contract §12 and issue 16: the conventions operators and integrators expect of an HTTP service. */

describe('operations: X-Request-Id', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server?.close());

  it('a well-formed incoming id (1–128 of A-Za-z0-9-_.:) is kept, on success and failure alike', async () => {
    for (const id of ['a', 'req-1', 'Trace_ID.42:7', '0'.repeat(128), '4bf92f3577b34da6a3ce929d0e0e4736']) {
      const ok = await api(`${server.url}${LIST}`, { key: server.adminKey, headers: { 'X-Request-Id': id } });
      expect(ok.status).to.equal(200);
      expect(ok.headers.get('x-request-id'), id).to.equal(id);
      const refused = await api(`${server.url}${LIST}`, { headers: { 'X-Request-Id': id } });
      expect(refused.status).to.equal(401);
      expect(refused.headers.get('x-request-id'), id).to.equal(id);
    }
  });

  it('anything else is replaced by a new UUID: too long, a space, a slash, a comma, non-ASCII', async () => {
    for (const id of ['0'.repeat(129), 'a b', 'a/b', 'a,b', 'é', 'a;b', '<x>']) {
      const res = await api(`${server.url}${LIST}`, { key: server.adminKey, headers: { 'X-Request-Id': id } });
      expect(res.headers.get('x-request-id'), id).to.match(UUID);
    }
    expect((await api(`${server.url}${LIST}`, { key: server.adminKey })).headers.get('x-request-id')).to.match(UUID);
  });

  it('requestIdOf (unit): empty and undefined get a UUID', () => {
    expect(requestIdOf(undefined)).to.match(UUID);
    expect(requestIdOf('')).to.match(UUID);
    expect(requestIdOf('x:y')).to.equal('x:y');
  });
});

describe('operations: 405 carries Allow on every route', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
    expect((await put(server, server.adminKey, 'a.md', { content: 'x' })).status).to.equal(200);
  });
  after(() => server?.close());

  const allowOf = (res: { headers: Headers }): string[] =>
    (res.headers.get('allow') ?? '')
      .split(/,\s*/)
      .filter(Boolean)
      .sort();

  const CASES: { method: string; path: string; allow: string[] }[] = [
    { method: 'POST', path: LIST, allow: ['GET', 'HEAD'] },
    { method: 'POST', path: `${ITEMS}/a.md`, allow: ['DELETE', 'GET', 'HEAD', 'PUT'] },
    { method: 'PATCH', path: `${ITEMS}/a.md`, allow: ['DELETE', 'GET', 'HEAD', 'PUT'] },
    { method: 'GET', path: `${LIST}/move`, allow: ['POST'] },
    { method: 'GET', path: `${LIST}/rollback`, allow: ['POST'] },
    { method: 'POST', path: `${LIST}/history/a.md`, allow: ['GET', 'HEAD'] },
    { method: 'DELETE', path: `${LIST}/folders/a`, allow: ['GET', 'HEAD', 'PUT'] },
    { method: 'PUT', path: `${LIST}/keys`, allow: ['GET', 'HEAD', 'POST'] },
    { method: 'POST', path: `${LIST}/search`, allow: ['GET', 'HEAD'] },
    { method: 'POST', path: `${LIST}/changes`, allow: ['GET', 'HEAD'] },
    { method: 'GET', path: `${LIST}/trash/restore`, allow: ['POST'] },
  ];
  for (const { method, path, allow } of CASES) {
    it(`${method} ${path} -> 405, Allow: ${allow.join(', ')}`, async () => {
      const res = await api(`${server.url}${path}`, { method, key: server.adminKey, ...(method === 'GET' ? {} : { body: {} }) });
      expectError(res, 405, 'Method not allowed');
      expect(allowOf(res)).to.deep.equal(allow);
    });
  }

  it('outside the API too: MCP (a JSON-RPC error body), the git and dashboard routes', async () => {
    const mcp = await api(`${server.url}/mcp`, { key: server.adminKey });
    expect(mcp.status).to.equal(405);
    expect(allowOf(mcp)).to.deep.equal(['POST']);
    const git = await fetch(`${server.url}/git/default.git/info/refs?service=git-upload-pack`, { method: 'POST' });
    expect(git.status).to.equal(405);
    expect(allowOf(git)).to.deep.equal(['GET', 'HEAD']);
    await git.text();
    const page = await fetch(`${server.url}/dashboard/`, { method: 'POST' });
    expect(page.status).to.equal(405);
    expect(allowOf(page)).to.deep.equal(['GET', 'HEAD']);
    await page.text();
  });
});

describe('operations: /healthz and /readyz', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server?.close());

  it('GET /healthz: 200 {success:true}, no key needed, with the standard headers', async () => {
    const res = await api(`${server.url}/healthz`, { headers: { 'X-Request-Id': 'probe-1' } });
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ success: true });
    expect(res.headers.get('x-request-id')).to.equal('probe-1');
    expect(res.headers.get('cache-control')).to.equal('no-store');
    const wrong = await api(`${server.url}/healthz`, { method: 'POST', body: {} });
    expectError(wrong, 405);
    expect(wrong.headers.get('allow')).to.equal('HEAD, GET');
  });

  it('GET /readyz: 200 {success:true} once the data dir takes a write and every organization is open; leaves no file behind', async () => {
    await server.org('second');
    const res = await api(`${server.url}/readyz`);
    expect(res.status).to.equal(200);
    expect(res.body).to.deep.equal({ success: true });
    expect((await nodeFs.readdir(server.dataDir)).filter((n) => n.startsWith('.readyz'))).to.deep.equal([]);
  });

  it('an organization that cannot be opened: 503 {success:false, error} naming it, with Retry-After; ready again once it is gone (after the 1 s cache)', async () => {
    await sleep(1100); // past the verdict cached by the test before
    const broken = `${server.dataDir}/orgs/broken.git`;
    await nodeFs.mkdir(broken, { recursive: true });
    await nodeFs.writeFile(`${broken}/HEAD`, 'ref: refs/heads/main\n');
    const res = await api(`${server.url}/readyz`);
    expect(res.status, JSON.stringify(res.body)).to.equal(503);
    expect(res.body).to.deep.equal({ success: false, error: 'Organizations could not be opened: broken' });
    expect(res.headers.get('retry-after')).to.equal('1');
    // The live process is still healthy: a restart would not help, so /healthz says so.
    expect((await api(`${server.url}/healthz`)).status).to.equal(200);
    await nodeFs.rm(broken, { recursive: true, force: true });
    expect((await api(`${server.url}/readyz`)).status, 'cached for a second').to.equal(503);
    await sleep(1100);
    expect((await api(`${server.url}/readyz`)).status).to.equal(200);
  });

  it('readinessCheck (unit): a data dir that refuses writes is not ready; concurrent probes share one check', async () => {
    let t = 0;
    let writes = 0;
    let failWith: string | undefined = 'EROFS';
    const orgs = {
      checkWritable: async () => {
        writes++;
        if (failWith) throw Object.assign(new Error('read-only'), { code: failWith });
      },
      openAll: async () => ({ opened: 1, failed: [] }),
    } as unknown as OrgStore;
    const ready = readinessCheck(orgs, () => t);
    const [a, b] = await Promise.all([ready(), ready()]);
    expect(a).to.deep.equal({ ready: false, reason: 'The data directory is not writable (EROFS)' });
    expect(b).to.deep.equal(a);
    expect(writes).to.equal(1);
    failWith = undefined;
    expect(await ready()).to.deep.equal(a);
    t += 1000;
    expect(await ready()).to.deep.equal({ ready: true });
    expect(writes).to.equal(2);
  });
});

describe('operations: request logs', () => {
  let server: TestServer;
  const lines: string[] = [];
  type Line = Record<string, unknown>;
  const requestLines = (): Line[] => lines.map((l) => JSON.parse(l) as Line).filter((l) => l.msg === 'request');
  before(async () => {
    server = await startTestServer({ logger: createLogger({ level: 'info', write: (line) => lines.push(line) }) });
  });
  after(() => server?.close());

  it('one JSON line per request at info: method, route pattern (never the raw path), status, ms, request id, key id; never a key', async () => {
    lines.length = 0;
    const writer = await server.key('writer');
    expect((await put(server, writer, 'secret-project/plan.md', { content: 'x' }, { 'X-Request-Id': 'log-1' })).status).to.equal(200);
    expect((await api(`${server.url}${ITEMS}/secret-project/plan.md`, { key: `ks_${'Z'.repeat(43)}` })).status).to.equal(401);
    expect((await api(`${server.url}/nowhere/at/all`)).status).to.equal(404);
    await sleep(20);
    const logged = requestLines();
    expect(logged).to.have.length(3);
    const [put1, refused, missing] = logged as [Line, Line, Line];
    expect(put1).to.include({ level: 'info', method: 'PUT', route: '/api/v1/knowledge/items{/*path}', status: 200, requestId: 'log-1' });
    expect(put1.keyId).to.match(/^key_[0-9a-f]{16}$/);
    expect(put1.ms).to.be.a('number').above(0);
    expect(put1.time).to.be.a('string');
    expect(refused).to.include({ method: 'GET', status: 401, keyId: null });
    expect(missing).to.include({ method: 'GET', route: '(none)', status: 404 });
    const all = lines.join('');
    expect(all).not.to.include('secret-project');
    expect(all).not.to.include(writer);
    expect(all).not.to.include('ZZZZZZZZ');
  });

  it('the logger hides credentials: fields named like one, and key-shaped text anywhere in a string', () => {
    const out: string[] = [];
    const logger = createLogger({ level: 'debug', write: (line) => out.push(line) });
    logger.error('failed', { error: `git clone http://x:ks_${'A'.repeat(43)}@host/git/a.git failed`, headers: { authorization: 'Bearer abc' }, secret: 's3' });
    logger.debug('shown at debug');
    const [first, second] = out.map((l) => JSON.parse(l) as Line);
    expect(first).to.deep.include({ level: 'error', msg: 'failed', error: 'git clone http://x:ks_***@host/git/a.git failed', headers: { authorization: '[redacted]' }, secret: '[redacted]' });
    expect(second).to.include({ level: 'debug', msg: 'shown at debug' });
    // Keys that name their organization (ks_<org>_…), whatever the organization id looks like.
    const random = `${'Zq_-'.repeat(10)}abc`;
    for (const key of [`ks_acme_${random}`, `ks_a_${random}`, `ks_my-org-2_${random}`, `ks_${'o'.repeat(63)}_${random}`]) {
      const text = redactSecrets(`clone http://x:${key}@host failed; Bearer ${key}, "${key}"`);
      expect(text, key).to.equal('clone http://x:ks_***@host failed; Bearer ks_***, "ks_***"');
    }
    expect(createLogger({ level: 'warn', write: (line) => out.push(line) }).info('hidden') === undefined && out.length).to.equal(2);
  });

  it('the logger redacts credential fields one level down and credential headers, and leaves the fields it was given as they were', () => {
    const out: string[] = [];
    const logger = createLogger({ level: 'info', write: (line) => out.push(line) });
    const fields = {
      key: 'k',
      token: 't',
      password: 'p',
      authorization: 'a',
      request: { token: 'nested', password: 'pw', path: '/x' },
      headers: { authorization: 'Bearer x', 'x-api-key': 'ks_short', cookie: 'c=1', accept: '*/*' },
      other: { cookie: 'kept: not a headers object' },
      keyId: 'id-1',
      list: ['ks_not-scanned-inside-arrays'],
    };
    logger.info('fields', fields);
    const line = JSON.parse(out[0] as string) as Record<string, unknown>;
    expect(line).to.deep.include({
      key: '[redacted]',
      token: '[redacted]',
      password: '[redacted]',
      authorization: '[redacted]',
      request: { token: '[redacted]', password: '[redacted]', path: '/x' },
      headers: { authorization: '[redacted]', 'x-api-key': '[redacted]', cookie: '[redacted]', accept: '*/*' },
      other: { cookie: 'kept: not a headers object' },
      keyId: 'id-1',
    });
    expect(fields.request.token).to.equal('nested');
    expect(fields.headers.authorization).to.equal('Bearer x');
  });
});

describe('operations: GET /metrics', () => {
  const TOKEN = 'scrape-token-0123456789';
  const scrape = async (server: TestServer, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; text: string; headers: Headers }> => {
    const res = await fetch(`${server.url}/metrics`, { headers });
    return { status: res.status, type: res.headers.get('content-type'), text: await res.text(), headers: res.headers };
  };
  /** The value of one sample line, e.g. `knowledge_commits_total` or `knowledge_http_requests_total{...}`. */
  const sample = (text: string, name: string, labels: Record<string, string> = {}): number | undefined => {
    for (const line of text.split('\n')) {
      const m = /^([a-z_]+)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m || m[1] !== name) continue;
      const have = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
      if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[3]);
    }
    return undefined;
  };

  describe('local (the default)', () => {
    let server: TestServer;
    before(async () => {
      server = await startTestServer({ config: { autoRepackObjects: 8 } });
    });
    after(() => server?.close());

    it('requests by route pattern and status, latency, commits, group-commit size, fsync time, queue depth, open organizations, search time', async () => {
      const writer = await server.key('writer');
      await Promise.all([1, 2, 3, 4, 5].map((i) => put(server, writer, `secret-project/n${i}.md`, { content: `note ${i}` })));
      expect((await api(`${server.url}${ITEMS}/secret-project/n1.md`, { key: writer })).status).to.equal(200);
      expect((await api(`${server.url}${ITEMS}/secret-project/none.md`, { key: writer })).status).to.equal(404);
      expect((await api(`${server.url}${LIST}/search?q=note`, { key: writer })).status).to.equal(200);
      // A search through MCP is a search too: timed where the index answers, whoever asked.
      const viaMcp = await fetch(`${server.url}/mcp`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${writer}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search', arguments: { query: 'note' } } }),
      });
      expect(viaMcp.status).to.equal(200);
      expect(((await viaMcp.json()) as { result: { isError?: boolean } }).result.isError).to.not.equal(true);
      const res = await scrape(server);
      expect(res.status).to.equal(200);
      expect(res.type).to.match(/^text\/plain; version=0\.0\.4/);
      const { text } = res;
      const item = '/api/v1/knowledge/items{/*path}';
      expect(sample(text, 'knowledge_http_requests_total', { method: 'PUT', route: item, status: '200' })).to.equal(5);
      expect(sample(text, 'knowledge_http_requests_total', { method: 'GET', route: item, status: '200' })).to.equal(1);
      expect(sample(text, 'knowledge_http_requests_total', { method: 'GET', route: item, status: '404' })).to.equal(1);
      expect(sample(text, 'knowledge_http_request_duration_seconds_count', { method: 'PUT', route: item })).to.equal(5);
      expect(sample(text, 'knowledge_commits_total')).to.be.at.least(5);
      const groups = sample(text, 'knowledge_group_commit_size_count') ?? 0;
      expect(groups).to.be.within(1, sample(text, 'knowledge_commits_total') ?? 0);
      expect(sample(text, 'knowledge_group_commit_fsync_seconds_count')).to.equal(groups);
      expect(sample(text, 'knowledge_group_commit_fsync_seconds_sum')).to.be.above(0);
      expect(sample(text, 'knowledge_write_queue_depth')).to.equal(0);
      expect(sample(text, 'knowledge_open_organizations')).to.equal(1);
      expect(sample(text, 'knowledge_search_duration_seconds_count')).to.equal(2);
      expect(sample(text, 'process_cpu_seconds_total')).to.be.a('number');
      // Labels are patterns: no item path, query or key reaches a scrape.
      expect(text).not.to.include('secret-project');
      expect(text).not.to.include(writer);
    });

    it('repack time, once an automatic repack has run', async function () {
      this.timeout(20_000);
      const writer = await server.key('writer');
      for (let i = 0; i < 6; i++) await put(server, writer, `bulk/b${i}.md`, { content: `bulk ${i}` });
      let repacks: number | undefined;
      for (let i = 0; i < 100 && !repacks; i++) {
        repacks = sample((await scrape(server)).text, 'knowledge_repack_duration_seconds_count', { result: 'ok' });
        if (!repacks) await sleep(100);
      }
      expect(repacks).to.be.at.least(1);
    });

    it('refused (403) to a request a proxy forwards, even from loopback: a local reverse proxy makes everyone local', async () => {
      const forwarded: Record<string, string>[] = [{ 'X-Forwarded-For': '203.0.113.9' }, { Forwarded: 'for=203.0.113.9' }, { 'X-Real-IP': '203.0.113.9' }];
      for (const headers of forwarded) {
        const res = await scrape(server, headers);
        expect(res.status).to.equal(403);
        expect(JSON.parse(res.text)).to.deep.equal({ success: false, error: 'Forbidden — metrics are served to this machine only (KNOWLEDGE_METRICS)' });
      }
    });
  });

  it('token:<secret>: Bearer <secret> from anywhere; otherwise 401 with WWW-Authenticate', async () => {
    const server = await startTestServer({ config: { metrics: { mode: 'token', token: TOKEN } } });
    try {
      const none = await scrape(server);
      expect(none.status).to.equal(401);
      expect(none.headers.get('www-authenticate')).to.equal('Bearer realm="metrics"');
      expect(JSON.parse(none.text)).to.deep.equal({ success: false, error: 'Invalid metrics token' });
      expect((await scrape(server, { Authorization: `Bearer ${TOKEN}x` })).status).to.equal(401);
      expect((await scrape(server, { Authorization: `Bearer ${server.adminKey}` })).status).to.equal(401);
      const ok = await scrape(server, { Authorization: `Bearer ${TOKEN}`, 'X-Forwarded-For': '203.0.113.9' });
      expect(ok.status).to.equal(200);
      expect(ok.text).to.include('knowledge_http_requests_total');
    } finally {
      await server.close();
    }
  });

  it('off: no route (404), and on: served to anyone', async () => {
    const off = await startTestServer({ config: { metrics: { mode: 'off' } } });
    const on = await startTestServer({ config: { metrics: { mode: 'on' } } });
    try {
      const res = await scrape(off);
      expect(res.status).to.equal(404);
      expect(JSON.parse(res.text)).to.deep.equal({ success: false, error: 'Not found' });
      expect((await scrape(on, { 'X-Forwarded-For': '203.0.113.9' })).status).to.equal(200);
    } finally {
      await Promise.all([off.close(), on.close()]);
    }
  });

  it('KNOWLEDGE_METRICS (unit): local by default; off, on, token:<16+ characters>; a bad value is refused without echoing a token', () => {
    expect(loadConfig({}).metrics).to.deep.equal({ mode: 'local' });
    expect(loadConfig({ KNOWLEDGE_METRICS: 'off' }).metrics).to.deep.equal({ mode: 'off' });
    expect(loadConfig({ KNOWLEDGE_METRICS: 'on' }).metrics).to.deep.equal({ mode: 'on' });
    expect(loadConfig({ KNOWLEDGE_METRICS: `token:${TOKEN}` }).metrics).to.deep.equal({ mode: 'token', token: TOKEN });
    expect(loadConfig({ KNOWLEDGE_METRICS: 'on' }, { metrics: 'off' }).metrics).to.deep.equal({ mode: 'off' });
    expect(() => loadConfig({ KNOWLEDGE_METRICS: 'yes' })).to.throw(ConfigError, /KNOWLEDGE_METRICS must be/);
    for (const short of ['token:', 'token:short-secret', `token:${TOKEN} x`]) {
      expect(() => loadConfig({ KNOWLEDGE_METRICS: short })).to.throw(ConfigError, /at least 16/).that.satisfies((e: Error) => !e.message.includes('short-secret'));
    }
  });
});

describe('operations: compression', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
    for (let i = 0; i < 20; i++) expect((await put(server, server.adminKey, `big/n${i}.md`, { content: `# Note ${i}\n\n${'lorem ipsum '.repeat(200)}` })).status).to.equal(200);
  });
  after(() => server?.close());

  /** A GET that leaves the body as sent (fetch would decompress it). */
  const rawGet = (url: string, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> =>
    new Promise((resolve, reject) => {
      http
        .get(url, { headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        })
        .on('error', reject);
    });

  it('a JSON answer over 32 KiB (a list) is gzip- or brotli-compressed when the client accepts it, with Vary: Accept-Encoding', async () => {
    const auth = { Authorization: `Bearer ${server.adminKey}` };
    const plain = await rawGet(`${server.url}${LIST}`, auth);
    expect(plain.headers['content-encoding']).to.equal(undefined);
    const gz = await rawGet(`${server.url}${LIST}`, { ...auth, 'Accept-Encoding': 'gzip' });
    expect(gz.headers['content-encoding']).to.equal('gzip');
    expect(gz.headers.vary).to.match(/accept-encoding/i);
    expect(gz.headers['x-request-id']).to.be.a('string');
    expect(gunzipSync(gz.body).equals(plain.body)).to.equal(true);
    expect(gz.body.length).to.be.below(plain.body.length / 4);
    const br = await rawGet(`${server.url}${LIST}`, { ...auth, 'Accept-Encoding': 'gzip, deflate, br' });
    expect(br.headers['content-encoding']).to.equal('br');
    expect(JSON.parse(brotliDecompressSync(br.body).toString('utf8'))).to.deep.equal(JSON.parse(plain.body.toString('utf8')));
  });

  it('an answer under 32 KiB (an item of 2.4 KB) goes as it is: compressing it would cost more CPU than the bytes are worth', async () => {
    for (const path of ['/healthz', `${ITEMS}/big/none.md`, `${ITEMS}/big/n0.md`]) {
      const res = await rawGet(`${server.url}${path}`, { Authorization: `Bearer ${server.adminKey}`, 'Accept-Encoding': 'gzip, br' });
      expect(res.headers['content-encoding'], path).to.equal(undefined);
      expect(JSON.parse(res.body.toString('utf8'))).to.have.property('success');
    }
  });

  it('git responses are never compressed, and a real git clone works with its Accept-Encoding', async function () {
    this.timeout(30_000);
    const refs = await rawGet(`${server.url}/git/default.git/info/refs?service=git-upload-pack`, { Authorization: basicAuth(server.adminKey), 'Accept-Encoding': 'gzip, br' });
    expect(refs.status).to.equal(200);
    expect(refs.headers['content-encoding']).to.equal(undefined);
    const work = await tmpDir('ks-compress-clone');
    try {
      const dir = join(work.dir, 'clone');
      await gitOk(['clone', '--quiet', cloneUrl(server.url, server.adminKey), dir]);
      expect(await nodeFs.readFile(join(dir, 'big/n19.md'), 'utf8')).to.match(/^# Note 19/);
    } finally {
      await work.cleanup();
    }
  });
});
