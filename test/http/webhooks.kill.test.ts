import { expect } from 'chai';
import { ensureBuilt, killAllChildren, spawnServe } from '../support/child.js';
import { git } from '../support/git.js';
import { Receiver } from '../support/receiver.js';
import { api } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';

interface Delivery {
  id: string;
  commitId: string;
  status: string;
  attempts: Array<{ status: number | null; error: string | null }>;
}

const ENV = { KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE: 'on', KNOWLEDGE_WEBHOOK_RETRY_BASE_MS: '200', KNOWLEDGE_WEBHOOK_TIMEOUT_MS: '1000' };

/**
 * The built server as a child process, killed with SIGKILL while deliveries are queued: one being retried
 * (its receiver fails) and one waiting behind it. After a restart both arrive, in order, the first with the
 * same delivery id and its attempt log from before the kill.
 */
describe('webhooks survive kill -9 (child process)', function () {
  this.timeout(90_000);

  let receiver: Receiver;
  let cleanup: (() => Promise<void>) | undefined;

  before(ensureBuilt);
  after(async () => {
    await killAllChildren();
    await receiver?.close();
    await cleanup?.();
  });

  it('delivers a queued delivery after SIGKILL and a restart', async () => {
    const tmp = await tmpDir('ks-webhook-kill');
    cleanup = tmp.cleanup;
    receiver = await Receiver.start();
    receiver.otherwise = 500;
    const first = await spawnServe(tmp.dir, 15_000, ENV);
    const key = first.adminKey as string;
    const call = (url: string, rest: string, init: { method?: string; body?: unknown } = {}) => api(`${url}/api/v1/knowledge${rest}`, { key, ...init });
    const created = await call(first.url, '/webhooks', { method: 'POST', body: { url: receiver.url } });
    expect(created.status, JSON.stringify(created.body)).to.equal(200);
    const hookId = (created.body?.data as { webhook: { id: string } }).webhook.id;
    const commits: string[] = [];
    for (const n of [1, 2]) {
      const res = await call(first.url, `/items/kill/${n}.md`, { method: 'PUT', body: { content: `${n}` } });
      expect(res.status).to.equal(200);
      commits.push((await git(['rev-parse', 'main'], { gitdir: `${tmp.dir}/orgs/default.git` })).trim());
    }
    // The first commit's delivery fails twice; the second waits behind it.
    await receiver.waitFor(() => receiver.received.length >= 2, 15_000);
    const killed = await first.kill('SIGKILL');
    expect(killed.signal).to.equal('SIGKILL');
    const before = receiver.received.length;
    const failedId = receiver.received[0]?.headers['x-knowledge-delivery'];

    receiver.otherwise = 200;
    const second = await spawnServe(tmp.dir, 15_000, ENV);
    await receiver.waitFor(() => receiver.delivered.length >= 2, 20_000, 'both deliveries after the restart');
    const delivered = receiver.delivered.map((r) => JSON.parse(r.body) as { commitId: string });
    expect(delivered.map((d) => d.commitId)).to.deep.equal(commits);
    expect(receiver.delivered[0]?.headers['x-knowledge-delivery']).to.equal(failedId);
    expect(receiver.received.slice(0, before).every((r) => JSON.parse(r.body).commitId === commits[0])).to.equal(true);

    const log = await call(second.url, `/webhooks/${hookId}/deliveries`);
    const deliveries = (log.body?.data as { deliveries: Delivery[] }).deliveries;
    expect(deliveries.map((d) => [d.commitId, d.status])).to.deep.equal([
      [commits[1], 'delivered'],
      [commits[0], 'delivered'],
    ]);
    const attempts = (deliveries[1] as Delivery).attempts;
    // The attempts made before the kill were recorded durably (at least those that had finished).
    expect(attempts.length).to.be.at.least(2);
    expect(attempts.slice(0, -1).every((a) => a.status === 500 && a.error === 'HTTP 500')).to.equal(true);
    expect(attempts.at(-1)).to.deep.include({ status: 200, error: null });
    await second.kill('SIGTERM');
  });
});
