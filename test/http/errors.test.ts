import { connect } from 'node:net';
import { expect } from 'chai';
import { loadConfig } from '../../src/app/config.js';
import { startServer } from '../../src/app/server.js';
import { createLogger } from '../../src/common/log.js';
import { tmpDir } from '../support/tmp.js';
import { commitCount } from '../support/git.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { del, expectError, get, ITEMS, itemUrl, LIST, list, MSG, put, rawRequest } from './helpers.js';

describe('HTTP errors: unknown routes and wrong methods', () => {
  let server: TestServer;

  before(async () => {
    server = await startTestServer();
    expect((await put(server, server.adminKey, 'a.md', { content: 'x' })).status).to.equal(200);
  });
  after(() => server?.close());

  const UNKNOWN = [
    '/api/v1/nope',
    '/api/v2/knowledge',
    '/api/v1/knowledge/nope',
    '/api/v1/knowledge/itemsx/a.md',
    '/api/v1',
    '/api/v1/',
    '/api/knowledge',
  ];
  for (const path of UNKNOWN) {
    it(`GET ${path} with a valid key -> 404 {success:false,error:"Not found"}`, async () => {
      const res = await api(`${server.url}${path}`, { key: server.adminKey });
      expect(res.status).to.equal(404);
      expect(res.body).to.deep.equal({ success: false, error: MSG.routeNotFound });
    });
  }

  it('POST/PUT/DELETE on an unknown route -> 404 Not found too', async () => {
    for (const method of ['POST', 'PUT', 'DELETE']) {
      const res = await api(`${server.url}/api/v1/nope`, { method, key: server.adminKey, body: { content: 'x' } });
      expect(res.status, method).to.equal(404);
      expect(res.body).to.deep.equal({ success: false, error: MSG.routeNotFound });
    }
  });

  const WRONG: { method: string; path: string }[] = [
    { method: 'POST', path: `${ITEMS}/a.md` },
    { method: 'PATCH', path: `${ITEMS}/a.md` },
    { method: 'POST', path: `${ITEMS}/absent.md` },
    { method: 'POST', path: LIST },
    { method: 'PUT', path: LIST },
    { method: 'DELETE', path: LIST },
    { method: 'PATCH', path: LIST },
    { method: 'PROPFIND', path: `${ITEMS}/a.md` },
  ];
  for (const { method, path } of WRONG) {
    it(`${method} ${path} -> 405 with the failure envelope, nothing changes`, async () => {
      const before = await commitCount(server.gitdir());
      const res = await api(`${server.url}${path}`, { method, key: server.adminKey, body: { content: 'changed' } });
      expectError(res, 405);
      expect(await commitCount(server.gitdir())).to.equal(before);
      const item = await get(server, server.adminKey, 'a.md');
      expect((item.body?.data?.item as { content: string }).content).to.equal('x');
    });
  }

  it('OPTIONS on an item still answers with a JSON object with success', async () => {
    const res = await fetch(itemUrl(server, 'a.md'), { method: 'OPTIONS', headers: { Authorization: `Bearer ${server.adminKey}` } });
    const text = await res.text();
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    expect(body, `OPTIONS body ${JSON.stringify(text)} (status ${res.status})`).to.be.an('object');
    expect((body as { success?: unknown }).success).to.be.a('boolean');
  });
});

describe('HTTP errors: every response carries success, X-Request-Id and nosniff', () => {
  let server: TestServer;
  let reader: string;

  before(async () => {
    server = await startTestServer({ maxContentBytes: 1000 });
    reader = await server.key('reader');
  });
  after(() => server?.close());

  function checkHeaders(label: string, headers: Headers): void {
    const id = headers.get('x-request-id');
    expect(id, `${label}: X-Request-Id`).to.be.a('string').and.have.length.above(0);
    expect(headers.get('x-content-type-options'), `${label}: X-Content-Type-Options`).to.equal('nosniff');
  }

  function checkJson(label: string, res: { status: number; headers: Headers; body: unknown }, success: boolean): void {
    checkHeaders(label, res.headers);
    expect(res.headers.get('content-type'), `${label}: Content-Type`).to.match(/^application\/json/);
    expect(res.body, `${label}: body`).to.be.an('object');
    expect((res.body as { success: unknown }).success, `${label}: success`).to.equal(success);
    if (!success) {
      const error = (res.body as { error: unknown }).error;
      expect(error, `${label}: error`).to.be.a('string').and.have.length.above(0);
      // No stack traces or internal paths.
      expect(error as string).to.not.include(server.dataDir);
      expect(error as string).to.not.match(/\n\s+at |node_modules|\/tmp\/|\.ts:\d+/);
    }
  }

  it('success responses: list, get, put (create and update), delete', async () => {
    const key = server.adminKey;
    checkJson('put create', await put(server, key, 'h/a.md', { content: 'a' }), true);
    checkJson('put update', await put(server, key, 'h/a.md', { content: 'b' }), true);
    checkJson('put unchanged', await put(server, key, 'h/a.md', { content: 'b' }), true);
    checkJson('list', await list(server, reader), true);
    checkJson('list paged', await list(server, reader, '?limit=1'), true);
    checkJson('get', await get(server, reader, 'h/a.md'), true);
    expect((await put(server, key, 'h/gone.md', { content: 'x' })).status).to.equal(200);
    checkJson('delete', await del(server, key, 'h/gone.md'), true);
  });

  it('304 carries the headers too', async () => {
    const etag = (await get(server, reader, 'h/a.md')).headers.get('etag') as string;
    const res = await get(server, reader, 'h/a.md', { 'If-None-Match': etag });
    expect(res.status).to.equal(304);
    checkHeaders('304', res.headers);
  });

  it('failure responses: 400, 401, 403, 404, 405, 409, 412, 413, 415', async () => {
    const key = server.adminKey;
    const cases: [string, number, Promise<{ status: number; headers: Headers; body: unknown }>][] = [
      ['400 path', 400, get(server, reader, 'Bad.md')],
      ['400 body', 400, api(itemUrl(server, 'h/x.md'), { method: 'PUT', key, body: '{oops', headers: { 'Content-Type': 'application/json' } })],
      ['400 query', 400, list(server, reader, '?limit=0')],
      ['401 list', 401, api(`${server.url}${LIST}`)],
      ['401 get', 401, api(itemUrl(server, 'h/a.md'), { key: `ks_${'x'.repeat(43)}` })],
      ['403', 403, put(server, reader, 'h/x.md', { content: 'x' })],
      ['404 item', 404, get(server, reader, 'h/none.md')],
      ['404 route', 404, api(`${server.url}/api/v1/nope`, { key })],
      ['405', 405, api(itemUrl(server, 'h/a.md'), { method: 'POST', key, body: { content: 'x' } })],
      ['409', 409, put(server, key, 'h/gone.md', { content: 'x' })],
      ['412', 412, put(server, key, 'h/a.md', { content: 'x' }, { 'If-Match': '"stale"' })],
      ['413', 413, put(server, key, 'h/x.md', { content: 'x'.repeat(1001) })],
      ['415', 415, api(itemUrl(server, 'h/x.md'), { method: 'PUT', key, body: '{"content":"x"}', headers: { 'Content-Type': 'text/plain' } })],
    ];
    for (const [label, status, pending] of cases) {
      const res = await pending;
      expect(res.status, `${label}: ${JSON.stringify(res.body)}`).to.equal(status);
      checkJson(label, res, false);
    }
  });

  it('request ids are unique per response', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      for (const res of [await list(server, reader), await get(server, reader, 'h/none.md'), await api(`${server.url}${LIST}`)]) {
        checkHeaders(`request ${i}`, res.headers);
        ids.push(res.headers.get('x-request-id') as string);
      }
    }
    expect(ids).to.have.length(30);
    expect(new Set(ids).size).to.equal(ids.length);
  });

  it('failures answered by the HTTP parser (oversized headers) still carry the envelope, X-Request-Id and nosniff', async () => {
    const res = await rawRequest(server, {
      path: LIST,
      headers: { Authorization: `Bearer ${server.adminKey}`, 'X-Padding': 'p'.repeat(32 * 1024) },
    });
    expect(res.status).to.be.within(400, 499);
    expect(res.body?.success).to.equal(false);
    expect(res.headers['x-content-type-options']).to.equal('nosniff');
    expect(res.headers['x-request-id'], 'X-Request-Id on a parser-level error').to.be.a('string').and.have.length.above(0);
  });

  it('the server keeps serving after all of the above', async () => {
    expect((await list(server, reader)).status).to.equal(200);
  });
});

describe('HTTP errors: clients that go away mid-request', () => {
  it('a PUT whose client closes before its body is read is not logged as a server fault, and the server goes on', async function () {
    this.timeout(30_000);
    const tmp = await tmpDir('ks-gone');
    const logged: Array<{ level: string; msg: string }> = [];
    let adminKey = '';
    const server = await startServer({
      config: { ...loadConfig({}, { dataDir: tmp.dir, port: '0', logLevel: 'info' }), rateLimitAuthFailures: 0 },
      logger: createLogger({ level: 'info', write: (line) => logged.push(JSON.parse(line) as { level: string; msg: string }) }),
      announce: (line) => {
        adminKey = /ks_\S+/.exec(line)?.[0] ?? '';
      },
    });
    try {
      const { port } = new URL(server.url);
      // Headers and part of the body, then the socket is destroyed: some requests are cut while
      // their body is read, others before it is (while authentication runs).
      await Promise.all(
        Array.from({ length: 60 }, (_, i) =>
          new Promise<void>((resolve) => {
            const socket = connect(Number(port), '127.0.0.1', () => {
              socket.write(`PUT /api/v1/knowledge/items/gone/${i}.md HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${adminKey}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"content":`);
              setTimeout(() => socket.destroy(), i % 3);
            });
            socket.on('close', () => resolve());
            socket.on('error', () => resolve());
          }),
        ),
      );
      await new Promise((r) => setTimeout(r, 300));
      const res = await api(`${server.url}/api/v1/knowledge/items/after.md`, { method: 'PUT', key: adminKey, body: { content: 'still here' } });
      expect(res.status).to.equal(200);
      expect(logged.filter((l) => l.level === 'error')).to.deep.equal([]);
    } finally {
      await server.close(2000);
      await tmp.cleanup();
    }
  });
});
