import http from 'node:http';
import { expect } from 'chai';
import { ConfigError, DEFAULTS, loadConfig } from '../../src/app/config.js';
import { clientAddress, TokenBuckets } from '../../src/http/middleware/rateLimit.js';
import { ensureBuilt, killAllChildren, spawnCli } from '../support/child.js';
import { commitCount } from '../support/git.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { sleep } from '../support/sleep.js';
import { tmpDir } from '../support/tmp.js';
import { get, LIST, MSG, put } from './helpers.js';

/**
 * Rate limits (see README, Reliability): per key on every API request, and per client address for failed
 * authentication; 429 `Too many requests` with Retry-After and the IETF RateLimit header fields;
 * configurable; the defaults never throttle a normal agent.
 */

const TOO_MANY = { success: false, error: 'Too many requests' };

function expectTooMany(res: ApiResponse, limit: number): void {
  expect(res.status, JSON.stringify(res.body)).to.equal(429);
  expect(res.body).to.deep.equal(TOO_MANY);
  const retryAfter = Number(res.headers.get('Retry-After'));
  expect(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After ${res.headers.get('Retry-After')}`).to.equal(true);
  expect(res.headers.get('RateLimit-Limit')).to.equal(String(limit));
  expect(res.headers.get('RateLimit-Remaining')).to.equal('0');
  expect(Number(res.headers.get('RateLimit-Reset'))).to.be.at.least(retryAfter);
  expect(res.headers.get('X-Request-Id')).to.be.a('string');
}

/** A GET from another loopback address (Linux routes all of 127/8 to lo): another client, as the server sees it. */
function getFrom(localAddress: string, url: string, key: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { localAddress, headers: { Authorization: `Bearer ${key}` } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
  });
}

describe('rate limits: token buckets (unit)', () => {
  const clock = (): { now: () => number; advance: (ms: number) => void } => {
    let t = 0;
    return { now: () => t, advance: (ms) => void (t += ms) };
  };

  it('a new name may spend the whole burst at once, then is refused', () => {
    const buckets = new TokenBuckets({ perMinute: 60, burst: 3 }, { now: clock().now });
    const quotas = [1, 2, 3, 4].map(() => buckets.take('k'));
    expect(quotas.map((q) => q.allowed)).to.deep.equal([true, true, true, false]);
    expect(quotas.map((q) => q.quota.remaining)).to.deep.equal([2, 1, 0, 0]);
    expect(quotas[0]?.quota).to.deep.include({ limit: 3, retryAfterSeconds: 0, resetSeconds: 1 });
    // Empty: one token comes back in 1 s, the whole bucket in 3 s.
    expect(quotas[3]?.quota).to.deep.include({ limit: 3, remaining: 0, retryAfterSeconds: 1, resetSeconds: 3 });
  });

  it('refills at the sustained rate, never above the burst', () => {
    const c = clock();
    const buckets = new TokenBuckets({ perMinute: 6, burst: 2 }, { now: c.now });
    expect(buckets.take('k').allowed).to.equal(true);
    expect(buckets.take('k').allowed).to.equal(true);
    const refused = buckets.take('k');
    expect(refused.allowed).to.equal(false);
    expect(refused.quota.retryAfterSeconds).to.equal(10);
    c.advance(9_900);
    expect(buckets.take('k').allowed).to.equal(false);
    c.advance(200);
    expect(buckets.take('k').allowed).to.equal(true);
    expect(buckets.take('k').allowed).to.equal(false);
    c.advance(10 * 60_000);
    expect(buckets.peek('k')).to.deep.equal({ limit: 2, remaining: 2, resetSeconds: 0, retryAfterSeconds: 0 });
  });

  it('names are independent', () => {
    const buckets = new TokenBuckets({ perMinute: 60, burst: 1 }, { now: clock().now });
    expect(buckets.take('a').allowed).to.equal(true);
    expect(buckets.take('a').allowed).to.equal(false);
    expect(buckets.take('b').allowed).to.equal(true);
  });

  it('keeps memory bounded: refilled buckets are dropped, and never more than maxBuckets are kept', () => {
    const c = clock();
    const buckets = new TokenBuckets({ perMinute: 60, burst: 5 }, { now: c.now, maxBuckets: 1000 });
    for (let i = 0; i < 500; i++) buckets.take(`idle-${i}`);
    expect(buckets.size).to.equal(500);
    c.advance(1000); // one token each: all 500 full again
    for (let i = 0; i < 200; i++) buckets.take('busy');
    expect(buckets.size, 'four refilled buckets dropped per call').to.equal(1);
    for (let i = 0; i < 5000; i++) buckets.take(`many-${i}`);
    expect(buckets.size).to.be.at.most(1000);
  });

  it('counts a client by its address: IPv4 as is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64', () => {
    expect(clientAddress('127.0.0.1')).to.equal('127.0.0.1');
    expect(clientAddress('::ffff:10.1.2.3')).to.equal('10.1.2.3');
    expect(clientAddress('2001:db8:1:2:3:4:5:6')).to.equal('2001:db8:1:2::/64');
    expect(clientAddress('2001:0DB8:0001:0002::9')).to.equal('2001:db8:1:2::/64');
    expect(clientAddress('2001:db8::1')).to.equal('2001:db8:0:0::/64');
    expect(clientAddress('::1')).to.equal('0:0:0:0::/64');
  });
});

describe('rate limits: configuration', () => {
  it('defaults: 6,000 requests a minute per key (all at once if need be); 20 failures a minute per address, 40 in a row', () => {
    const config = loadConfig({});
    expect(config).to.deep.include({ rateLimitPerKey: 6000, rateLimitPerKeyBurst: 6000, rateLimitAuthFailures: 20, rateLimitAuthFailuresBurst: 40 });
    expect(DEFAULTS.rateLimitPerKey).to.equal(6000);
  });

  it('from the environment; a changed rate brings its burst along unless that is set too; flags win', () => {
    expect(loadConfig({ KNOWLEDGE_RATE_LIMIT_PER_KEY: '120' })).to.deep.include({ rateLimitPerKey: 120, rateLimitPerKeyBurst: 120 });
    expect(loadConfig({ KNOWLEDGE_RATE_LIMIT_PER_KEY: '120', KNOWLEDGE_RATE_LIMIT_PER_KEY_BURST: '10' })).to.deep.include({
      rateLimitPerKey: 120,
      rateLimitPerKeyBurst: 10,
    });
    expect(loadConfig({ KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES: '5' })).to.deep.include({ rateLimitAuthFailures: 5, rateLimitAuthFailuresBurst: 5 });
    expect(loadConfig({ KNOWLEDGE_RATE_LIMIT_PER_KEY: '0' }).rateLimitPerKey).to.equal(0);
    const flags = loadConfig({ KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES: '5' }, { rateLimitAuthFailures: '7', rateLimitAuthFailuresBurst: '9' });
    expect(flags).to.deep.include({ rateLimitAuthFailures: 7, rateLimitAuthFailuresBurst: 9 });
  });

  it('refuses what is not a whole number, and a burst of 0', () => {
    for (const env of [
      { KNOWLEDGE_RATE_LIMIT_PER_KEY: '-1' },
      { KNOWLEDGE_RATE_LIMIT_PER_KEY: 'lots' },
      { KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES: '1.5' },
      { KNOWLEDGE_RATE_LIMIT_PER_KEY_BURST: '0' },
    ]) {
      expect(() => loadConfig(env), JSON.stringify(env)).to.throw(ConfigError, /KNOWLEDGE_RATE_LIMIT/);
    }
  });
});

describe('rate limits: per key (HTTP)', () => {
  let server: TestServer;
  let other: string;
  // One request a second, five at once.
  const BURST = 5;

  before(async () => {
    server = await startTestServer({ config: { rateLimitPerKey: 60, rateLimitPerKeyBurst: BURST } });
    other = await server.key('writer');
  });
  after(() => server?.close());

  it('successful answers carry RateLimit-Limit, -Remaining and -Reset', async () => {
    const res = await api(`${server.url}${LIST}`, { key: server.adminKey });
    expect(res.status).to.equal(200);
    expect(res.headers.get('RateLimit-Limit')).to.equal(String(BURST));
    expect(res.headers.get('RateLimit-Remaining')).to.equal(String(BURST - 1));
    expect(Number(res.headers.get('RateLimit-Reset'))).to.be.within(1, BURST);
    expect(res.headers.get('Retry-After')).to.equal(null);
  });

  it('past the burst: 429 Too many requests with Retry-After and RateLimit fields, and a write refused so changes nothing', async () => {
    const commits = await commitCount(server.gitdir());
    let refused: ApiResponse | undefined;
    for (let i = 0; i < 20 && !refused; i++) {
      const res = await put(server, server.adminKey, 'limited.md', { content: `attempt ${i}` });
      if (res.status === 429) refused = res;
      else expect(res.status).to.equal(200);
    }
    expect(refused, 'a 429 within 20 quick requests').to.not.equal(undefined);
    expectTooMany(refused as ApiResponse, BURST);
    // Every PUT answered 200 made its commit; the refused one made none.
    const accepted = (await commitCount(server.gitdir())) - commits;
    expect(accepted).to.be.within(BURST - 1, 19);
    const stored = await get(server, other, 'limited.md');
    expect(stored.status).to.equal(200);
  });

  it('another key is not held back by the first one', async () => {
    expect((await api(`${server.url}${LIST}`, { key: other })).status).to.equal(200);
  });

  it('the key is served again once Retry-After has passed', async () => {
    const res = await api(`${server.url}${LIST}`, { key: server.adminKey });
    if (res.status === 429) await sleep(Number(res.headers.get('Retry-After')) * 1000 + 50);
    expect((await api(`${server.url}${LIST}`, { key: server.adminKey })).status).to.equal(200);
  });

  it('a limit of 0 is no limit: no RateLimit fields, no 429', async () => {
    const open = await startTestServer({ config: { rateLimitPerKey: 0 } });
    try {
      const results = await Promise.all(Array.from({ length: 50 }, () => api(`${open.url}${LIST}`, { key: open.adminKey })));
      expect(results.every((r) => r.status === 200)).to.equal(true);
      expect(results[0]?.headers.get('RateLimit-Limit')).to.equal(null);
    } finally {
      await open.close();
    }
  });
});

describe('rate limits: failed authentication per client address (HTTP)', () => {
  let server: TestServer;
  const BURST = 3;
  const wrongKey = `ks_${'W'.repeat(43)}`;

  before(async () => {
    // Three failures in a row, then one every 10 s: no refill during the test.
    server = await startTestServer({ config: { rateLimitAuthFailures: 6, rateLimitAuthFailuresBurst: BURST } });
  });
  after(() => server?.close());

  it('successful requests spend nothing of it', async () => {
    for (let i = 0; i < 2 * BURST; i++) expect((await api(`${server.url}${LIST}`, { key: server.adminKey })).status).to.equal(200);
  });

  it('git asking first without credentials, as it does, is no failure', async () => {
    for (let i = 0; i < 2 * BURST; i++) {
      const res = await fetch(`${server.url}/git/default.git/info/refs?service=git-upload-pack`);
      expect(res.status).to.equal(401);
      await res.text();
    }
    expect((await api(`${server.url}${LIST}`, { key: server.adminKey })).status).to.equal(200);
  });

  it(`${BURST} failures are 401 (a wrong git password counts too); then the address's failures get 429, its valid keys 200`, async () => {
    const wrongBasic = `Basic ${Buffer.from(`x:${wrongKey}`).toString('base64')}`;
    const gitRes = await fetch(`${server.url}/git/default.git/info/refs?service=git-upload-pack`, { headers: { Authorization: wrongBasic } });
    expect(gitRes.status).to.equal(401);
    await gitRes.text();
    for (let i = 1; i < BURST; i++) {
      const res = await api(`${server.url}${LIST}`, { key: wrongKey });
      expect(res.status).to.equal(401);
      expect(res.body?.error).to.equal(MSG.invalidKey);
    }
    expectTooMany(await api(`${server.url}${LIST}`, { key: wrongKey }), BURST);
    // Issue 16: a valid key is never refused by the address limit (a NAT or an office shares one address).
    const writer = await server.key('writer');
    for (const key of [server.adminKey, writer, server.adminKey]) {
      const ok = await api(`${server.url}${LIST}`, { key });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(200);
    }
    expect((await put(server, writer, 'ratelimit/ok.md', { content: 'x' })).status).to.equal(200);
    const gitOk = await fetch(`${server.url}/git/default.git/info/refs?service=git-upload-pack`, {
      headers: { Authorization: `Basic ${Buffer.from(`x:${server.adminKey}`).toString('base64')}` },
    });
    expect(gitOk.status).to.equal(200);
    await gitOk.text();
    // ... while its failures stay refused.
    expectTooMany(await api(`${server.url}${LIST}`, { key: wrongKey }), BURST);
    expectTooMany(await api(`${server.url}${LIST}`, { headers: { 'X-API-Key': 'nonsense' } }), BURST);
    const gitAgain = await fetch(`${server.url}/git/default.git/info/refs?service=git-upload-pack`, { headers: { Authorization: wrongBasic } });
    expect(gitAgain.status).to.equal(429);
    expect(gitAgain.headers.get('Retry-After')).to.match(/^\d+$/);
    await gitAgain.text();
  });

  it('X-Forwarded-For is ignored by default: a client cannot pose as another address', async () => {
    expectTooMany(await api(`${server.url}${LIST}`, { key: wrongKey, headers: { 'X-Forwarded-For': '203.0.113.9' } }), BURST);
  });

  it('another client address is served as usual', async () => {
    expect(await getFrom('127.0.0.2', `${server.url}${LIST}`, server.adminKey)).to.equal(200);
    expect(await getFrom('127.0.0.2', `${server.url}${LIST}`, wrongKey)).to.equal(401);
  });
});

describe('rate limits: KNOWLEDGE_TRUST_PROXY takes the client address from X-Forwarded-For', () => {
  const wrongKey = `ks_${'W'.repeat(43)}`;

  it('off by default; on is one proxy, a number is that many; anything else is refused', () => {
    expect(loadConfig({}).trustProxy).to.equal(0);
    expect(loadConfig({ KNOWLEDGE_TRUST_PROXY: 'off' }).trustProxy).to.equal(0);
    expect(loadConfig({ KNOWLEDGE_TRUST_PROXY: 'on' }).trustProxy).to.equal(1);
    expect(loadConfig({ KNOWLEDGE_TRUST_PROXY: '2' }).trustProxy).to.equal(2);
    expect(loadConfig({ KNOWLEDGE_TRUST_PROXY: 'on' }, { trustProxy: 'off' }).trustProxy).to.equal(0);
    for (const bad of ['yes', '-1', '17', '1.5']) expect(() => loadConfig({ KNOWLEDGE_TRUST_PROXY: bad }), bad).to.throw(ConfigError, /KNOWLEDGE_TRUST_PROXY/);
  });

  for (const hops of [1, 2]) {
    it(`behind ${hops} prox${hops === 1 ? 'y' : 'ies'}: each client behind the proxy is counted alone, by the entry the outermost proxy added`, async () => {
      const server = await startTestServer({ config: { rateLimitAuthFailures: 6, rateLimitAuthFailuresBurst: 2, trustProxy: hops } });
      try {
        // What the proxies append: the client's address, then (with two) the outer proxy's.
        const forwarded = (client: string, invented?: string): string =>
          [...(invented ? [invented] : []), client, ...(hops === 2 ? ['10.0.0.1'] : [])].join(', ');
        const fail = (client: string, invented?: string): Promise<ApiResponse> =>
          api(`${server.url}${LIST}`, { key: wrongKey, headers: { 'X-Forwarded-For': forwarded(client, invented) } });
        expect((await fail('203.0.113.1')).status).to.equal(401);
        // An entry the client wrote itself, left of the proxy's, changes nothing.
        expect((await fail('203.0.113.1', '198.51.100.99')).status).to.equal(401);
        expectTooMany(await fail('203.0.113.1', '198.51.100.98'), 2);
        expect((await fail('203.0.113.2')).status).to.equal(401);
        const ok = await api(`${server.url}${LIST}`, { key: server.adminKey, headers: { 'X-Forwarded-For': forwarded('203.0.113.1') } });
        expect(ok.status).to.equal(200);
      } finally {
        await server.close();
      }
    });
  }
});

describe('rate limits: the serve command takes them from flags and the environment', () => {
  let tmp: { dir: string; cleanup: () => Promise<void> };
  before(async function () {
    this.timeout(120_000);
    await ensureBuilt();
    tmp = await tmpDir('ks-ratelimit-serve');
  });
  after(async () => {
    await killAllChildren();
    await tmp?.cleanup();
  });

  it('--rate-limit-per-key(-burst) and KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES(_BURST)', async function () {
    this.timeout(30_000);
    process.env.KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES = '1';
    process.env.KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES_BURST = '1';
    let child: ReturnType<typeof spawnCli>;
    try {
      child = spawnCli(['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', tmp.dir, '--rate-limit-per-key', '1', '--rate-limit-per-key-burst', '2']);
    } finally {
      delete process.env.KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES;
      delete process.env.KNOWLEDGE_RATE_LIMIT_AUTH_FAILURES_BURST;
    }
    let url: string | undefined;
    for (let i = 0; i < 200 && !url; i++) {
      url = /Knowledge store listening on (\S+) /.exec(child.out.stdout)?.[1];
      if (!url) await sleep(50);
    }
    expect(url, child.out.stderr).to.be.a('string');
    const key = /Admin API key for organization "default": (ks_\S+)/.exec(child.out.stdout)?.[1] as string;
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await api(`${url}${LIST}`, { key })).status);
    expect(statuses).to.deep.equal([200, 200, 429]);
    expect((await api(`${url}${LIST}`, { key: `ks_${'Z'.repeat(43)}` })).status).to.equal(401);
    expect((await api(`${url}${LIST}`, { key: `ks_${'Z'.repeat(43)}` })).status).to.equal(429);
    child.proc.kill('SIGTERM');
    expect((await child.exited).code).to.equal(0);
  });
});

describe('rate limits: the defaults never throttle a normal agent', () => {
  let server: TestServer;
  before(async () => {
    // Every limit at its default, failed authentication included.
    server = await startTestServer({ config: { rateLimitAuthFailures: DEFAULTS.rateLimitAuthFailures } });
    for (let i = 0; i < 20; i++) expect((await put(server, server.adminKey, `agent/doc-${i}.md`, { content: `doc ${i}` })).status).to.equal(200);
  });
  after(() => server?.close());

  it('2,000 requests at 32 concurrency (reads, lists, writes), as fast as the server answers: no 429', async function () {
    this.timeout(120_000);
    const TOTAL = 2000;
    const CONCURRENCY = 32;
    let next = 0;
    const statuses = new Map<number, number>();
    let lowest = Infinity;
    const started = Date.now();
    const worker = async (): Promise<void> => {
      while (next < TOTAL) {
        const i = next++;
        const res =
          i % 10 === 0
            ? await put(server, server.adminKey, `agent/doc-${i % 20}.md`, { content: `doc ${i}` })
            : i % 5 === 0
              ? await api(`${server.url}${LIST}?prefix=agent/&limit=10`, { key: server.adminKey })
              : await get(server, server.adminKey, `agent/doc-${i % 20}.md`);
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        lowest = Math.min(lowest, Number(res.headers.get('RateLimit-Remaining')));
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));
    const ms = Date.now() - started;
    console.log(`      normal agent: ${TOTAL} requests in ${ms} ms (${Math.round((TOTAL / ms) * 1000)}/s), lowest RateLimit-Remaining ${lowest}`);
    expect(Object.fromEntries(statuses)).to.deep.equal({ 200: TOTAL });
  });
});
