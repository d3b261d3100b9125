import { createHmac, timingSafeEqual } from 'node:crypto';
import { stat } from 'node:fs/promises';
import { expect } from 'chai';
import { ConfigError, loadConfig } from '../../src/app/config.js';
import { Receiver } from '../support/receiver.js';
import { SseClient } from '../support/sse.js';
import { api, startTestServer, type ApiResponse, type TestServer } from '../support/server.js';
import { head, urlOf } from './adminApi.js';
import { createKeyWithId, del, expectError, put, revoke } from './helpers.js';

interface Delivery {
  id: string;
  commitId: string;
  status: string;
  attempts: Array<{ at: string; status: number | null; error: string | null; ms: number }>;
  nextAttemptAt: string | null;
}

interface Body {
  id: string;
  webhookId: string;
  event: string;
  organizationId: string;
  commitId: string;
  changes: Array<{ path: string; change: string; commitId: string }>;
}

/** What a receiver does: HMAC-SHA256 of the raw body with the hook's secret, compared in constant time. */
function verify(secret: string, body: string, header: string | string[] | undefined): boolean {
  const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`);
  const got = Buffer.from(String(header));
  return got.length === expected.length && timingSafeEqual(got, expected);
}

function createHook(server: TestServer, key: string, body: unknown): Promise<ApiResponse> {
  return api(urlOf(server, '/webhooks'), { method: 'POST', key, body });
}

async function hookOf(server: TestServer, key: string, body: Record<string, unknown>): Promise<{ id: string; secret: string }> {
  const res = await createHook(server, key, body);
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  const data = res.body?.data as { webhook: { id: string }; secret: string };
  return { id: data.webhook.id, secret: data.secret };
}

async function deliveries(server: TestServer, key: string, id: string): Promise<Delivery[]> {
  const res = await api(urlOf(server, `/webhooks/${id}/deliveries`), { key });
  expect(res.status, JSON.stringify(res.body)).to.equal(200);
  return (res.body?.data as { deliveries: Delivery[] }).deliveries;
}

describe('HTTP webhooks: /webhooks', function () {
  this.timeout(60_000);

  let server: TestServer;
  let admin: string;
  let receiver: Receiver;
  const hooks: string[] = [];

  before(async () => {
    server = await startTestServer({ config: { webhooks: { allowPrivate: true, retryBaseMs: 100, timeoutMs: 400 } } });
    admin = server.adminKey;
  });
  beforeEach(async () => {
    receiver = await Receiver.start();
  });
  afterEach(async () => {
    for (const id of hooks.splice(0)) await api(urlOf(server, `/webhooks/${id}`), { method: 'DELETE', key: admin });
    await receiver.close();
  });
  after(async () => server?.close());

  it('refuses bad input with 400 and creates nothing; only admins may manage hooks', async () => {
    const bad: Array<[unknown, RegExp]> = [
      [{ url: 'ftp://127.0.0.1/x' }, /url must be an absolute http or https URL/],
      [{ url: 'not a url' }, /url must be an absolute http or https URL/],
      [{ url: 'javascript:alert(1)' }, /http or https/],
      [{ url: 'http://user:pw@127.0.0.1/x' }, /credentials/],
      [{ url: receiver.url, events: ['created', 'bogus'] }, /events must list some of created, updated, deleted/],
      [{ url: receiver.url, events: [] }, /events/],
      [{ url: receiver.url, events: ['created', 'created'] }, /each once/],
      [{ url: receiver.url, prefix: 'docs' }, /prefix must end with/],
      [{ url: receiver.url, prefix: '../x/' }, /Invalid path/],
      [{ url: receiver.url, extra: 1 }, /extra/],
      [{ url: 42 }, /url/],
      [{}, /url/],
    ];
    for (const [body, message] of bad) expectError(await createHook(server, admin, body), 400, message);
    expectError(await api(urlOf(server, '/webhooks'), { method: 'POST', key: admin, body: 'not json', headers: { 'Content-Type': 'application/json' } }), 400);
    const writer = await server.key('writer');
    expectError(await createHook(server, writer, { url: receiver.url }), 403, 'Forbidden — requires knowledge:admin permission');
    expectError(await api(urlOf(server, '/webhooks'), { key: writer }), 403);
    const list = await api(urlOf(server, '/webhooks'), { key: admin });
    expect((list.body?.data as { webhooks: unknown[] }).webhooks).to.deep.equal([]);
    expectError(await api(urlOf(server, '/webhooks/wh_nope/deliveries'), { key: admin }), 404, 'Webhook not found');
    expectError(await api(urlOf(server, '/webhooks/wh_nope'), { method: 'DELETE', key: admin }), 404, 'Webhook not found');
  });

  it('KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE is off unless on; any other value stops the start with a message', () => {
    expect(loadConfig({}).webhooks.allowPrivate).to.equal(false);
    expect(loadConfig({ KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE: 'on' }).webhooks.allowPrivate).to.equal(true);
    expect(() => loadConfig({ KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE: 'yes' })).to.throw(ConfigError, 'KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE must be on or off (got "yes")');
  });

  it('refuses a private address unless KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE is on', async () => {
    const strict = await startTestServer();
    try {
      for (const url of ['http://127.0.0.1:9/x', 'http://localhost/x', 'http://[::1]/x', 'http://10.1.2.3/x', 'http://169.254.169.254/latest', 'http://[::ffff:192.168.0.1]/x']) {
        expectError(await createHook(strict, strict.adminKey, { url }), 400, 'url points to a private address; set KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE=on to allow it');
      }
      expect((await createHook(strict, strict.adminKey, { url: 'https://example.com/hook' })).status).to.equal(200);
    } finally {
      await strict.close();
    }
  });

  it('delivers each commit signed, shows the secret once, and keeps the secret file private', async () => {
    const created = await createHook(server, admin, { url: receiver.url });
    const { webhook, secret } = created.body?.data as { webhook: { id: string; events: string[]; prefix: null; state: string }; secret: string };
    hooks.push(webhook.id);
    expect(secret).to.match(/^whsec_/);
    expect(webhook).to.include({ prefix: null, state: 'active' });
    expect(webhook.events).to.deep.equal(['created', 'updated', 'deleted']);
    const list = await api(urlOf(server, '/webhooks'), { key: admin });
    expect(JSON.stringify(list.body)).to.not.include(secret);
    await put(server, admin, 'hook/a.md', { content: 'a' });
    const commit = await head(server);
    await receiver.waitFor(() => receiver.delivered.length >= 1);
    const got = receiver.received[0];
    expect(got?.headers['x-knowledge-event']).to.equal('changes');
    expect(verify(secret, got?.body as string, got?.headers['x-knowledge-signature'])).to.equal(true);
    expect(verify(secret, `${got?.body as string} `, got?.headers['x-knowledge-signature'])).to.equal(false);
    const body = JSON.parse(got?.body as string) as Body;
    expect(body).to.include({ webhookId: webhook.id, event: 'changes', organizationId: 'default', commitId: commit, id: got?.headers['x-knowledge-delivery'] });
    expect(body.changes.map((c) => [c.path, c.change])).to.deep.equal([['hook/a.md', 'created']]);
    const mode = (await stat(`${server.gitdir()}/knowledge-webhooks.json`)).mode & 0o777;
    expect(mode).to.equal(0o600);
  });

  it('retries a failing and a hanging receiver with backoff, in commit order, and logs every attempt', async () => {
    const { id, secret } = await hookOf(server, admin, { url: receiver.url });
    hooks.push(id);
    receiver.script = [500, 'hang', 503];
    const commits: string[] = [];
    for (const n of [1, 2, 3]) {
      await put(server, admin, `order/${n}.md`, { content: `${n}` });
      commits.push(await head(server));
    }
    await receiver.waitFor(() => receiver.delivered.length >= 3, 20_000);
    const bodies = receiver.received.map((r) => JSON.parse(r.body) as Body);
    // Commit 1 took four attempts (500, no answer, 503, 200); commits 2 and 3 were held back until it went through.
    expect(bodies.map((b) => b.commitId)).to.deep.equal([commits[0], commits[0], commits[0], commits[0], commits[1], commits[2]]);
    expect(new Set(receiver.received.slice(0, 4).map((r) => r.headers['x-knowledge-delivery'])).size).to.equal(1);
    for (const r of receiver.received) expect(verify(secret, r.body, r.headers['x-knowledge-signature'])).to.equal(true);
    // Backoff: each wait is longer than the one before (100 ms base, doubling; the hang adds its 400 ms timeout).
    const gaps = receiver.received.slice(0, 4).map((r, i, all) => (i === 0 ? 0 : r.at - (all[i - 1] as { at: number }).at));
    expect(gaps[1]).to.be.at.least(90);
    expect(gaps[3]).to.be.at.least(390);
    const log = await deliveries(server, admin, id);
    expect(log.map((d) => [d.commitId, d.status])).to.deep.equal([
      [commits[2], 'delivered'],
      [commits[1], 'delivered'],
      [commits[0], 'delivered'],
    ]);
    const first = log[2] as Delivery;
    expect(first.attempts.map((a) => [a.status, a.error])).to.deep.equal([
      [500, 'HTTP 500'],
      [null, 'no answer within 400 ms'],
      [503, 'HTTP 503'],
      [200, null],
    ]);
    expect(first.nextAttemptAt).to.equal(null);
  });

  it('applies the hook\'s folder and kinds', async () => {
    const { id } = await hookOf(server, admin, { url: receiver.url, prefix: 'docs/', events: ['created', 'deleted'] });
    hooks.push(id);
    await put(server, admin, 'other/x.md', { content: 'x' });
    await put(server, admin, 'docs/a.md', { content: 'a' });
    await put(server, admin, 'docs/a.md', { content: 'a2' });
    expect((await del(server, admin, 'docs/a.md')).status).to.equal(200);
    await receiver.waitFor(() => receiver.delivered.length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received.map((r) => (JSON.parse(r.body) as Body).changes.map((c) => [c.path, c.change]))).to.deep.equal([
      [['docs/a.md', 'created']],
      [['docs/a.md', 'deleted']],
    ]);
  });

  it('stops a hook whose creator key is revoked', async () => {
    const creator = await createKeyWithId(server, 'admin');
    const { id } = await hookOf(server, creator.secret, { url: receiver.url });
    hooks.push(id);
    await put(server, admin, 'revoked/1.md', { content: '1' });
    await receiver.waitFor(() => receiver.delivered.length >= 1);
    await revoke(creator.keys, creator.id);
    await new Promise((r) => setTimeout(r, 1200)); // the key store notices within a second
    await put(server, admin, 'revoked/2.md', { content: '2' });
    await new Promise((r) => setTimeout(r, 500));
    expect(receiver.received).to.have.length(1);
    const list = await api(urlOf(server, '/webhooks'), { key: admin });
    const hook = (list.body?.data as { webhooks: Array<{ id: string; state: string; stoppedReason: string }> }).webhooks.find((h) => h.id === id);
    expect(hook).to.include({ state: 'stopped', stoppedReason: 'The key that created this webhook was revoked' });
  });

  it('deletes a hook: no more deliveries, and its log is gone', async () => {
    const { id } = await hookOf(server, admin, { url: receiver.url });
    const res = await api(urlOf(server, `/webhooks/${id}`), { method: 'DELETE', key: admin });
    expect(res.status).to.equal(200);
    await put(server, admin, 'deleted-hook/1.md', { content: '1' });
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received).to.have.length(0);
    expectError(await api(urlOf(server, `/webhooks/${id}/deliveries`), { key: admin }), 404, 'Webhook not found');
  });
});

describe('HTTP webhooks and events: scoped keys', function () {
  this.timeout(60_000);

  let server: TestServer;
  let receiver: Receiver;
  before(async () => {
    server = await startTestServer({ config: { webhooks: { allowPrivate: true, retryBaseMs: 100, timeoutMs: 400 } } });
    receiver = await Receiver.start();
  });
  after(async () => {
    await receiver?.close();
    await server?.close();
  });

  async function scopedKey(role: string, scopes: string[]): Promise<string> {
    const res = await api(urlOf(server, '/keys'), { method: 'POST', key: server.adminKey, body: { name: `${role}-scoped`, role, scopes } });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return (res.body?.data as { secret: string }).secret;
  }

  it('a scoped key\'s stream and a scoped admin\'s hook carry only what lies in the scopes; it manages only its own hooks', async () => {
    const reader = await scopedKey('reader', ['docs/']);
    const scopedAdmin = await scopedKey('admin', ['docs/']);
    const stream = await SseClient.open(urlOf(server, '/events'), { Authorization: `Bearer ${reader}` });
    const { id } = await hookOf(server, scopedAdmin, { url: receiver.url });
    const other = await hookOf(server, server.adminKey, { url: `${receiver.url}-all` });
    await put(server, server.adminKey, 'secret/s.md', { content: 's' });
    const both = await api(urlOf(server, '/commits'), {
      method: 'POST',
      key: server.adminKey,
      body: { operations: [{ op: 'put', path: 'secret/t.md', content: 't' }, { op: 'put', path: 'docs/a.md', content: 'a' }] },
    });
    expect(both.status).to.equal(200);
    const mixed = await head(server);
    await stream.waitFor(1);
    await receiver.waitFor(() => receiver.received.filter((r) => r.headers['x-knowledge-delivery'] !== undefined && JSON.parse(r.body).webhookId === id).length >= 1);
    await new Promise((r) => setTimeout(r, 300));
    expect(stream.events.map((e) => e.id)).to.deep.equal([mixed]);
    expect(pairsOf(stream.commits()[0]?.data.changes ?? [])).to.deep.equal([['docs/a.md', 'created']]);
    const mine = receiver.received.map((r) => JSON.parse(r.body) as Body).filter((b) => b.webhookId === id);
    expect(mine.map((b) => pairsOf(b.changes))).to.deep.equal([[['docs/a.md', 'created']]]);
    // The unscoped admin's hook saw all three items.
    const all = receiver.received.map((r) => JSON.parse(r.body) as Body).filter((b) => b.webhookId === other.id);
    expect(all.flatMap((b) => b.changes.map((c) => c.path))).to.deep.equal(['secret/s.md', 'secret/t.md', 'docs/a.md']);
    // The scoped admin lists and manages only its own hook.
    const list = await api(urlOf(server, '/webhooks'), { key: scopedAdmin });
    expect((list.body?.data as { webhooks: Array<{ id: string }> }).webhooks.map((h) => h.id)).to.deep.equal([id]);
    expectError(await api(urlOf(server, `/webhooks/${other.id}/deliveries`), { key: scopedAdmin }), 404, 'Webhook not found');
    expectError(await api(urlOf(server, `/webhooks/${other.id}`), { method: 'DELETE', key: scopedAdmin }), 404, 'Webhook not found');
    stream.close();
  });
});

const pairsOf = (changes: Array<{ path: string; change: string }>): Array<[string, string]> => changes.map((c) => [c.path, c.change]);
