import { expect } from 'chai';
import { loadConfig } from '../../src/app/config.js';
import { eventually } from '../support/gitDaemon.js';
import { Receiver } from '../support/receiver.js';
import { random } from '../support/random.js';
import { SseClient } from '../support/sse.js';
import { api, startTestServer, type TestServer } from '../support/server.js';
import { urlOf } from './adminApi.js';
import { ITEMS, LIST } from './helpers.js';

/**
 * KNOWLEDGE_MAX_OPEN_ORGS over real HTTP: with two organizations allowed open and six in use at once, every
 * request is answered as if all were open (no 5xx, every write readable and findable), an event stream and a
 * webhook of organizations closed and opened around them miss nothing, and the server ends with no more open
 * than the limit and the ones it must keep.
 */

const ORGS = ['o0', 'o1', 'o2', 'o3', 'o4', 'o5'];

const metric = (text: string, name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

describe('HTTP: organizations closed for being idle (KNOWLEDGE_MAX_OPEN_ORGS)', function () {
  this.timeout(120_000);

  let server: TestServer;
  let receiver: Receiver;
  const keys = new Map<string, string>();

  before(async () => {
    server = await startTestServer({ config: { maxOpenOrgs: 2, webhooks: { allowPrivate: true, retryBaseMs: 100, timeoutMs: 2_000 } } });
    receiver = await Receiver.start();
    for (const orgId of ORGS) keys.set(orgId, await server.org(orgId));
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
  });

  it('KNOWLEDGE_MAX_OPEN_ORGS and --max-open-orgs: 1000 by default, 0 for no limit, anything else refused', () => {
    expect(loadConfig({}).maxOpenOrgs).to.equal(1_000);
    expect(loadConfig({ KNOWLEDGE_MAX_OPEN_ORGS: '0' }).maxOpenOrgs).to.equal(0);
    expect(loadConfig({ KNOWLEDGE_MAX_OPEN_ORGS: '50' }, { maxOpenOrgs: '7' }).maxOpenOrgs).to.equal(7);
    for (const bad of ['-1', 'many', '1.5']) {
      expect(() => loadConfig({ KNOWLEDGE_MAX_OPEN_ORGS: bad })).to.throw(`KNOWLEDGE_MAX_OPEN_ORGS must be an integer from 0 to 10000000 (got "${bad}")`);
    }
  });

  it('answers every request as if all were open; a stream and a webhook miss nothing', async () => {
    const keyOf = (orgId: string): string => keys.get(orgId) as string;
    // o0: an event stream held open throughout; o1: a webhook (its organization is kept open from then on).
    const stream = await SseClient.open(urlOf(server, '/events'), { Authorization: `Bearer ${keyOf('o0')}` });
    expect(stream.status).to.equal(200);
    const hook = await api(urlOf(server, '/webhooks'), { method: 'POST', key: keyOf('o1'), body: { url: receiver.url } });
    expect(hook.status, JSON.stringify(hook.body)).to.equal(200);
    // Listing the others' (no) hooks keeps none of them open.
    for (const orgId of ['o2', 'o3', 'o4', 'o5']) expect((await api(urlOf(server, '/webhooks'), { key: keyOf(orgId) })).status).to.equal(200);

    const next = random(20261124);
    const below = (n: number): number => Math.floor(next() * n);
    const written = new Map<string, string>();
    const commits = new Map<string, number>(ORGS.map((o) => [o, 0]));
    const unexpected: string[] = [];
    const worker = async (w: number): Promise<void> => {
      for (let i = 0; i < 40; i++) {
        const orgId = ORGS[below(ORGS.length)] as string;
        const path = `w${w}/n${below(3)}.md`;
        const key = keyOf(orgId);
        const op = below(4);
        if (op === 0) {
          const content = `quince ${w} ${i}`;
          const res = await api(`${server.url}${ITEMS}/${path}`, { method: 'PUT', key, body: { content } });
          if (res.status !== 200 && res.status !== 201) unexpected.push(`PUT ${orgId} ${path}: ${res.status} ${JSON.stringify(res.body)}`);
          else {
            written.set(`${orgId}:${path}`, content);
            commits.set(orgId, (commits.get(orgId) ?? 0) + 1);
          }
        } else if (op === 1) {
          const res = await api(`${server.url}${ITEMS}/${path}`, { key });
          const expected = written.has(`${orgId}:${path}`) ? 200 : 404;
          if (res.status !== expected) unexpected.push(`GET ${orgId} ${path}: ${res.status}, expected ${expected}`);
        } else if (op === 2) {
          const res = await api(`${server.url}/api/v1/knowledge/search?q=quince`, { key });
          if (res.status !== 200) unexpected.push(`search ${orgId}: ${res.status} ${JSON.stringify(res.body)}`);
        } else {
          const res = await api(`${server.url}${LIST}`, { key });
          if (res.status !== 200) unexpected.push(`list ${orgId}: ${res.status} ${JSON.stringify(res.body)}`);
        }
      }
    };
    await Promise.all([0, 1, 2, 3, 4, 5].map(worker));
    expect(unexpected).to.deep.equal([]);

    // Every write is there, read and found, in organizations closed and opened many times over.
    for (const [key, content] of written) {
      const [orgId, path] = key.split(':') as [string, string];
      const res = await api(`${server.url}${ITEMS}/${path}`, { key: keyOf(orgId) });
      expect((res.body?.data as { item: { content: string } } | undefined)?.item.content, `${key}: ${res.status} ${JSON.stringify(res.body)}`).to.equal(content);
    }
    for (const orgId of ORGS) {
      const res = await api(`${server.url}/api/v1/knowledge/search?q=quince&limit=100`, { key: keyOf(orgId) });
      const paths = (res.body?.data as { results: Array<{ path: string }> }).results.map((r) => r.path).sort();
      const expected = [...written.keys()].filter((k) => k.startsWith(`${orgId}:`)).map((k) => k.slice(orgId.length + 1)).sort();
      expect(paths, orgId).to.deep.equal(expected);
    }

    // The stream's organization stayed open under it and told of every commit; the webhook's, of every one too.
    await stream.waitFor(commits.get('o0') as number, 20_000);
    expect(stream.commits()).to.have.length(commits.get('o0') as number);
    stream.close();
    // Each commit delivered (a delivery retried after a slow answer would be the same commit again).
    const delivered = (orgId: string): Set<string> =>
      new Set(receiver.received.map((r) => JSON.parse(r.body) as { organizationId: string; commitId: string }).filter((b) => b.organizationId === orgId).map((b) => b.commitId));
    await receiver.waitFor(() => delivered('o1').size >= (commits.get('o1') as number), 20_000, 'the webhook deliveries');
    expect(delivered('o1').size).to.equal(commits.get('o1') as number);

    // o2's hooks (none) were loaded for a repository closed since: a hook made now is on the one open now.
    const later = await api(urlOf(server, '/webhooks'), { method: 'POST', key: keyOf('o2'), body: { url: receiver.url } });
    expect(later.status, JSON.stringify(later.body)).to.equal(200);
    expect((await api(`${server.url}${ITEMS}/late.md`, { method: 'PUT', key: keyOf('o2'), body: { content: 'after the hook' } })).status).to.be.oneOf([200, 201]);
    await receiver.waitFor(() => delivered('o2').size > 0, 20_000, 'the delivery of o2\'s commit');
    const removed = await api(urlOf(server, `/webhooks/${(later.body?.data as { webhook: { id: string } }).webhook.id}`), { method: 'DELETE', key: keyOf('o2') });
    expect(removed.status).to.equal(200);
    // Two more organizations given a hook each, then two, and all deleted: once their last is gone they are no
    // longer kept open (else o1 to o4 would all stay open, over the limit).
    for (const orgId of ['o3', 'o4']) {
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const made = await api(urlOf(server, '/webhooks'), { method: 'POST', key: keyOf(orgId), body: { url: receiver.url } });
        expect(made.status, JSON.stringify(made.body)).to.equal(200);
        ids.push((made.body?.data as { webhook: { id: string } }).webhook.id);
      }
      for (const id of ids) expect((await api(urlOf(server, `/webhooks/${id}`), { method: 'DELETE', key: keyOf(orgId) })).status).to.equal(200);
    }

    const metrics = async (): Promise<string> => (await fetch(`${server.url}/metrics`)).text();
    expect(metric(await metrics(), 'knowledge_organizations_closed_total')).to.be.greaterThan(10);
    // At rest: o1 (its webhook keeps it) and one more, once the ended stream has let o0 go (the fan-out process
    // notices a closed stream a moment later) and a request or two have closed what is over the limit.
    await eventually(
      'at most 2 organizations open',
      async () => {
        await api(`${server.url}${LIST}`, { key: keyOf('o5') });
        return metric(await metrics(), 'knowledge_open_organizations') <= 2 ? true : undefined;
      },
      10_000,
    );
    // o2, o3 and o4 were closed and opened again: they have no hook, and a hook made now is delivered.
    for (const orgId of ['o2', 'o3', 'o4']) expect((await api(urlOf(server, '/webhooks'), { key: keyOf(orgId) })).body?.data).to.deep.equal({ webhooks: [] });
    const again = await api(urlOf(server, '/webhooks'), { method: 'POST', key: keyOf('o3'), body: { url: receiver.url } });
    expect(again.status, JSON.stringify(again.body)).to.equal(200);
    expect((await api(`${server.url}${ITEMS}/again.md`, { method: 'PUT', key: keyOf('o3'), body: { content: 'after the second hook' } })).status).to.equal(200);
    await receiver.waitFor(() => delivered('o3').size > 0, 20_000, 'the delivery of o3\'s commit');
  });
});
