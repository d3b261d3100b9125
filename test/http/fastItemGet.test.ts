import http from 'node:http';
import { expect } from 'chai';
import { loadConfig, type Config } from '../../src/app/config.js';
import { silentLogger, type Logger, type LogFields } from '../../src/common/log.js';
import { createKey } from '../../src/domain/keys.js';
import { createApp, sharedParts, type AppDeps } from '../../src/http/app.js';
import { withFastItemGet } from '../../src/http/fastItemGet.js';
import { listen } from '../../src/http/listen.js';
import { KeyStore } from '../../src/storage/keys/keyStore.js';
import { OrgStore } from '../../src/storage/repo/orgStore.js';
import { hostGit } from '../support/git.js';
import { api, fs, startTestServer } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { urlOf } from './adminApi.js';
import { upload } from './fileHelpers.js';
import { createKeyWithId, del, ITEMS, put, revoke } from './helpers.js';

/**
 * The fast GET path (src/http/fastItemGet.ts) against the Koa path it stands in front of: two servers over the
 * same stores, one Koa alone (what every request got before), one the fast path with Koa behind it (as the
 * server runs). Every request goes to both; status, header fields (names, order, values; only Date differs, and a
 * request id the server made up) and body bytes must be the same, over keys of every role and scope, readable
 * and unreadable items, conditions, HEAD, compression, queries and broken credentials. The fast server also
 * counts what it handed to Koa, so the test knows which answers the fast path made (and fails if it made none).
 */

interface Raw {
  status: number;
  head: string[];
  body: Buffer;
}

function request(base: string, method: string, path: string, headers: Record<string, string>): Promise<Raw> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, head: res.rawHeaders, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The header fields as sent, but Date's value (and a request id the server made up, checked for its shape). */
function comparable(raw: Raw, sentRequestId: string | undefined): string[] {
  const out: string[] = [];
  for (let i = 0; i < raw.head.length; i += 2) {
    const [name, value] = [raw.head[i] as string, raw.head[i + 1] as string];
    if (name === 'Date') out.push(name, '<date>');
    else if (name === 'X-Request-Id' && value !== sentRequestId) {
      expect(value).to.match(/^[0-9a-f-]{36}$/);
      out.push(name, '<new id>');
    } else out.push(name, value);
  }
  return out;
}

/** A logger that keeps the access log lines (the fields both paths must log alike). */
function recording(): { logger: Logger; lines: LogFields[] } {
  const lines: LogFields[] = [];
  const keep = (msg: string, fields: LogFields = {}): void => {
    if (msg === 'request') lines.push(fields);
  };
  return { logger: { ...silentLogger, info: keep }, lines };
}

async function twoServers(dataDir: string, config: Partial<Config>) {
  const base = {
    config: { ...loadConfig({}, { dataDir }), rateLimitAuthFailures: 0, rateLimitPerKey: 0, ...config },
    orgs: new OrgStore({ git: hostGit, fs, dataDir, logger: silentLogger }),
    keys: new KeyStore({ fs, dataDir, logger: silentLogger }),
    version: 'test',
    // Nothing here uploads: reads and one PUT.
    extractor: {} as AppDeps['extractor'],
  };
  const koaLog = recording();
  const fastLog = recording();
  const koaOnly = await listen({ handler: createApp({ ...base, logger: koaLog.logger }).callback(), host: '127.0.0.1', port: 0 });
  const fastDeps: AppDeps = { ...base, logger: fastLog.logger };
  const shared = sharedParts(fastDeps);
  const koa = createApp(fastDeps, shared).callback();
  const counter = { handedToKoa: 0 };
  const fast = await listen({
    handler: withFastItemGet({ keys: base.keys, orgs: base.orgs, ...shared }, (req, res) => {
      counter.handedToKoa++;
      koa(req, res);
    }),
    host: '127.0.0.1',
    port: 0,
  });
  return {
    koaOnly,
    fast,
    counter,
    koaLog,
    fastLog,
    close: async () => {
      await Promise.all([koaOnly.close(100), fast.close(100)]);
      base.keys.stopWatch();
      await base.orgs.closeAll();
    },
  };
}

/** Sends the request to both servers; expects the same answer. Returns it, and whether the fast path made it. */
async function same(s: Awaited<ReturnType<typeof twoServers>>, method: string, path: string, headers: Record<string, string>, label: string): Promise<{ raw: Raw; fast: boolean }> {
  const sentId = headers['X-Request-Id'];
  const expected = await request(s.koaOnly.url, method, path, headers);
  const before = s.counter.handedToKoa;
  const got = await request(s.fast.url, method, path, headers);
  expect(got.status, `${label}: status`).to.equal(expected.status);
  expect(comparable(got, sentId), `${label}: header fields`).to.deep.equal(comparable(expected, sentId));
  expect(got.body.equals(expected.body), `${label}: body\n${got.body.toString('utf8').slice(0, 300)}\nexpected\n${expected.body.toString('utf8').slice(0, 300)}`).to.equal(true);
  return { raw: got, fast: s.counter.handedToKoa === before };
}

describe('HTTP fast GET path: the same answers as Koa, byte for byte', function () {
  this.timeout(60_000);
  let dataDir: string;
  let cleanup: () => Promise<void>;
  const keys: Record<string, string> = {};
  const paths = ['docs/a.md', 'docs/deep/b.md', 'notes/c.md', 'secret/admin-only.md', 'ruled/x.md', 'ruled/open.md', 'big/large.md', 'docs/unicode.md', 'files/report.txt', 'gone.md', 'never/there.md'];

  before(async () => {
    const tmp = await tmpDir('ks-fastget');
    dataDir = tmp.dir;
    cleanup = tmp.cleanup;
    const server = await startTestServer({ dataDir });
    try {
      keys.admin = server.adminKey;
      keys.writer = await server.key('writer');
      keys.reader = await server.key('reader');
      const store = new KeyStore({ fs, dataDir, logger: silentLogger });
      keys.scoped = (await createKey({ keys: store, orgId: 'default', role: 'reader', name: 'scoped', scopes: ['docs/', 'ruled/'] })).secret;
      keys.otherOrg = await server.org('other');
      const revocable = await createKeyWithId(server, 'reader');
      keys.revoked = revocable.secret;
      const w = keys.writer;
      for (const [path, content] of [['docs/a.md', '# A\n'], ['docs/deep/b.md', 'b'], ['notes/c.md', 'c'], ['ruled/x.md', 'x'], ['gone.md', 'soon gone'], ['other.md', 'o']]) {
        expect((await put(server, w, path as string, { content })).status).to.equal(200);
      }
      expect((await put(server, keys.admin, 'secret/admin-only.md', { content: 's', requiredReadPermission: 'knowledge:admin' })).status).to.equal(200);
      expect((await put(server, keys.admin, 'ruled/open.md', { content: 'open', requiredReadPermission: 'knowledge:read' })).status).to.equal(200);
      expect((await api(urlOf(server, '/folders/ruled'), { method: 'PUT', key: keys.admin, body: { requiredReadPermission: 'knowledge:write' } })).status).to.equal(200);
      expect((await put(server, w, 'big/large.md', { content: `${'Lorem ipsum dolor sit amet. '.repeat(1_500)}\n` })).status).to.equal(200);
      expect((await put(server, w, 'docs/unicode.md', { content: 'é — 🙂 "quoted" \\ back\nslash\u2028 <tag> &amp;' })).status).to.equal(200);
      expect((await upload(server, w, 'files/report.txt', Buffer.from('a text file\n'), 'text/plain')).status).to.equal(200);
      expect((await del(server, keys.admin, 'gone.md')).status).to.equal(200);
      await revoke(revocable.keys, revocable.id);
    } finally {
      await server.close();
    }
  });
  after(() => cleanup?.());

  it('every role, scope and item: 200s, 304s and HEADs from the fast path, the rest from Koa, all the same bytes', async () => {
    const s = await twoServers(dataDir, {});
    try {
      let fast = 0;
      let total = 0;
      for (const [who, key] of Object.entries(keys)) {
        for (const path of paths) {
          const target = `${ITEMS}/${path}`;
          const auth = { Authorization: `Bearer ${key}` };
          const first = await same(s, 'GET', target, auth, `${who} GET ${path}`);
          const etag = first.raw.head[first.raw.head.indexOf('ETag') + 1] ?? '"none"';
          const variants: Array<[string, Record<string, string>]> = [
            ['HEAD', auth],
            ['GET', { 'X-API-Key': key }],
            ['GET', { ...auth, 'X-Request-Id': 'trace-42:abc' }],
            ['GET', { ...auth, 'X-Request-Id': 'bad id with spaces' }],
            ['GET', { ...auth, 'If-None-Match': etag }],
            ['GET', { ...auth, 'If-None-Match': `W/${etag}` }],
            ['GET', { ...auth, 'If-None-Match': `"other", ${etag}` }],
            ['GET', { ...auth, 'If-None-Match': '*' }],
            ['GET', { ...auth, 'If-None-Match': '"other"' }],
            ['HEAD', { ...auth, 'If-None-Match': etag }],
            ['GET', { ...auth, 'Accept-Encoding': 'gzip, br' }],
            ['GET', { ...auth, 'Accept-Encoding': 'identity' }],
          ];
          const answers: Array<{ raw: Raw; fast: boolean; headers: Record<string, string> }> = [{ ...first, headers: auth }];
          for (const [method, headers] of variants) answers.push({ ...(await same(s, method, target, headers, `${who} ${method} ${path} ${JSON.stringify(headers)}`)), headers });
          for (const a of answers) {
            total++;
            if (a.fast) fast++;
            // The fast path answers nothing but successful reads (a 200, a HEAD, a 304)...
            if (a.fast) expect([200, 304]).to.include(a.raw.status);
            // ...and every one of them but a large answer to a client that accepts an encoding (Koa may compress it).
            const mayCompress = path === 'big/large.md' && 'Accept-Encoding' in a.headers;
            if (first.raw.status === 200) expect(a.fast, `${who} ${path} ${JSON.stringify(a.headers)}: answered fast`).to.equal(!mayCompress);
          }
        }
      }
      expect(fast, 'answers the fast path made').to.be.above(100);
      expect(total - fast, 'answers Koa made').to.be.above(100);
      // The access log: the same line for each request (its time and a made-up request id aside).
      const strip = (l: LogFields): LogFields => ({ ...l, ms: 0, requestId: /^[0-9a-f-]{36}$/.test(String(l.requestId)) ? '<new>' : l.requestId });
      expect(s.fastLog.lines.map(strip)).to.deep.equal(s.koaLog.lines.map(strip));
    } finally {
      await s.close();
    }
  });

  it('URLs the fast path leaves to Koa: queries, encodings, other routes and methods', async () => {
    const s = await twoServers(dataDir, {});
    try {
      const auth = { Authorization: `Bearer ${keys.admin}` };
      for (const target of [`${ITEMS}/docs/a.md?ref=main`, `${ITEMS}/docs/a.md?version=1`, `${ITEMS}/docs/a.md?x=1`, `${ITEMS}/docs%2Fa.md`, `${ITEMS}/Docs/A.md`, `${ITEMS}/docs//a.md`, `${ITEMS}/docs/../a.md`, `${ITEMS}/`, `${ITEMS}`, `${ITEMS}/docs/a.md/`]) {
        const a = await same(s, 'GET', target, auth, `GET ${target}`);
        expect(a.fast, target).to.equal(false);
      }
      expect((await same(s, 'OPTIONS', `${ITEMS}/docs/a.md`, auth, 'OPTIONS')).fast).to.equal(false);
      expect((await same(s, 'DELETE', `${ITEMS}/never/there.md`, auth, 'DELETE')).fast).to.equal(false);
    } finally {
      await s.close();
    }
  });

  it('a new version is a new answer: the content, ETag and length of the version the index holds', async () => {
    const s = await twoServers(dataDir, {});
    try {
      const auth = { Authorization: `Bearer ${keys.writer}` };
      const before = await same(s, 'GET', `${ITEMS}/notes/c.md`, auth, 'before');
      expect(before.fast).to.equal(true);
      // Written through the fast server (Koa behind it); both servers share the stores.
      const written = await api(`${s.fast.url}${ITEMS}/notes/c.md`, { method: 'PUT', key: keys.writer, body: { content: 'c, version two, longer' } });
      expect(written.status).to.equal(200);
      const after = await same(s, 'GET', `${ITEMS}/notes/c.md`, auth, 'after');
      expect(after.fast).to.equal(true);
      expect(JSON.parse(after.raw.body.toString('utf8')).data.item.content).to.equal('c, version two, longer');
      expect(after.raw.head[after.raw.head.indexOf('ETag') + 1]).to.equal(written.headers.get('etag'));
      // The old version's tag no longer matches: 200, not 304.
      const old = before.raw.head[before.raw.head.indexOf('ETag') + 1] as string;
      expect((await same(s, 'GET', `${ITEMS}/notes/c.md`, { ...auth, 'If-None-Match': old }, 'old tag')).raw.status).to.equal(200);
    } finally {
      await s.close();
    }
  });

  it('the per-key quota is one: the fast path spends it, and the refusal past it is Koa\'s 429', async () => {
    const s = await twoServers(dataDir, { rateLimitPerKey: 1, rateLimitPerKeyBurst: 3 });
    try {
      const auth = { Authorization: `Bearer ${keys.reader}` };
      const statuses: number[] = [];
      const fastOnes: boolean[] = [];
      for (let i = 0; i < 5; i++) {
        const a = await same(s, 'GET', `${ITEMS}/docs/a.md`, auth, `request ${i + 1}`);
        statuses.push(a.raw.status);
        fastOnes.push(a.fast);
      }
      expect(statuses).to.deep.equal([200, 200, 200, 429, 429]);
      expect(fastOnes).to.deep.equal([true, true, true, false, false]);
      // Koa's own requests spend the same quota: a list by the same key is refused too.
      expect((await api(`${s.fast.url}/api/v1/knowledge`, { key: keys.reader })).status).to.equal(429);
    } finally {
      await s.close();
    }
  });
});
