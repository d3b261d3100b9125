import { createHmac } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import { isPrivateAddress } from '../../src/domain/privateAddress.js';
import { webhookSender, type Resolve } from '../../src/app/webhookSender.js';
import { silentLogger } from '../../src/common/log.js';
import type { EventFeed } from '../../src/domain/events.js';
import { deliveryId, deliveryRequest, hookChanges, retryDelayMs, signature } from '../../src/domain/webhookDelivery.js';
import { HookWorker } from '../../src/domain/webhookWorker.js';
import type { KeyStore } from '../../src/storage/keys/keyStore.js';
import type { OrgRepo } from '../../src/storage/repo/orgRepo.js';
import type { WebhookRecord } from '../../src/storage/webhooks/webhookFile.js';

const change = (path: string, kind: 'created' | 'updated' | 'deleted') => ({ id: 'i', path, change: kind, commitId: 'c', timestamp: 't' });
const event = { organizationId: 'default', commitId: 'c'.repeat(40), timestamp: '2026-11-23T00:00:00.000Z', changes: [change('docs/a.md', 'created'), change('notes/b.md', 'updated'), change('docs/c.md', 'deleted')] };

describe('webhook deliveries (domain)', () => {
  it('retries after base, 2×base, 4×base … never more than an hour apart', () => {
    expect([1, 2, 3, 4, 5].map((n) => retryDelayMs(n, 30_000))).to.deep.equal([30_000, 60_000, 120_000, 240_000, 480_000]);
    expect(retryDelayMs(8, 30_000)).to.equal(3_600_000);
    expect(retryDelayMs(200, 30_000)).to.equal(3_600_000);
  });

  it('signs the exact body with HMAC-SHA256 of the secret', () => {
    const body = '{"a":1}';
    expect(signature('whsec_x', body)).to.equal(`sha256=${createHmac('sha256', 'whsec_x').update(body).digest('hex')}`);
    const { body: sent, headers } = deliveryRequest({ hook: { id: 'wh_1', secret: 'whsec_x' }, event, changes: event.changes, id: 'dlv_1' });
    expect(headers['X-Knowledge-Signature']).to.equal(signature('whsec_x', sent));
    expect(headers['X-Knowledge-Delivery']).to.equal('dlv_1');
    expect(headers['X-Knowledge-Event']).to.equal('changes');
    expect(JSON.parse(sent)).to.deep.include({ id: 'dlv_1', webhookId: 'wh_1', commitId: event.commitId });
  });

  it('gives every attempt at one commit the same delivery id, and other commits or hooks another', () => {
    expect(deliveryId('wh_1', 'a')).to.equal(deliveryId('wh_1', 'a')).and.match(/^dlv_[0-9a-f]{24}$/);
    expect(deliveryId('wh_1', 'a')).to.not.equal(deliveryId('wh_1', 'b'));
    expect(deliveryId('wh_1', 'a')).to.not.equal(deliveryId('wh_2', 'a'));
  });

  it('applies a hook\'s folder and kinds', () => {
    expect(hookChanges(event, { prefix: 'docs/', events: ['created', 'updated', 'deleted'] }).map((c) => c.path)).to.deep.equal(['docs/a.md', 'docs/c.md']);
    expect(hookChanges(event, { prefix: null, events: ['updated'] }).map((c) => c.path)).to.deep.equal(['notes/b.md']);
    expect(hookChanges(null, { prefix: null, events: ['created'] })).to.deep.equal([]);
  });

  it('knows which addresses are not public', () => {
    for (const a of ['127.0.0.1', '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', '::', 'fe80::1', 'fd00::1', '::ffff:127.0.0.1', '224.0.0.1', '::7f00:1', '64:ff9b::7f00:1', '2002:7f00:1::']) {
      expect(isPrivateAddress(a), a).to.equal(true);
    }
    for (const a of ['93.184.216.34', '8.8.8.8', '2606:4700:4700::1111', '::ffff:8.8.8.8', '172.32.0.1']) expect(isPrivateAddress(a), a).to.equal(false);
  });
});

describe('webhook worker (domain)', () => {
  it('runs again after a failure, instead of stopping the hook silently until a restart', async function () {
    this.timeout(10_000);
    let calls = 0;
    // The key store fails once (say EMFILE), then answers: the creator is gone, so the hook stops, visibly.
    const keys = {
      get: async () => {
        calls++;
        if (calls === 1) throw new Error('EMFILE: too many open files');
        return undefined;
      },
    };
    const hook: WebhookRecord = { id: 'wh_1', url: 'http://example.invalid/', events: ['created'], prefix: null, secret: 's', createdBy: 'key_1', createdAt: '', cursor: 'c', state: 'active', stoppedReason: null, deliveries: [] };
    let persisted = 0;
    const errors: string[] = [];
    const worker = new HookWorker(hook, {
      repo: { orgId: 'default' } as unknown as OrgRepo,
      keys: keys as unknown as KeyStore,
      feed: {} as EventFeed,
      send: async () => ({ status: 200 }),
      settings: { retryBaseMs: 1000, timeoutMs: 1000 },
      clock: () => new Date(),
      logger: { ...silentLogger, error: (message: string) => errors.push(message) },
      persist: async () => {
        persisted++;
      },
    });
    await worker.done;
    expect(calls).to.equal(2);
    expect(errors).to.deep.equal(['webhook worker failed; it runs again after a pause']);
    expect([hook.state, persisted]).to.deep.equal(['stopped', 1]);
  });
});

describe('webhook sender (app)', () => {
  it('connects only to the addresses it checked: a name that answers a public address, then a private one, gets nowhere', async () => {
    const { createServer } = await import('node:http');
    const receiver = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
    const port = (receiver.address() as AddressInfo).port;
    try {
      // A rebinding name: public at the first lookup, this host at every later one.
      let lookups = 0;
      const resolve: Resolve = (_host, callback) => {
        lookups++;
        callback(null, [{ address: lookups === 1 ? '93.184.216.34' : '127.0.0.1', family: 4 }]);
      };
      const send = webhookSender({ allowPrivate: false, resolve });
      const attempt = (): Promise<string> =>
        send({ url: `http://rebind.example:${port}/hook`, headers: {}, body: '{}', timeoutMs: 2000 }).then(
          (r) => `status ${r.status}`,
          (err: Error) => err.message,
        );
      // The first attempt connects to the public address it checked (unreachable here: it fails, never reaching 127.0.0.1).
      expect(await attempt()).to.not.equal('status 200');
      expect(await attempt()).to.equal('rebind.example resolves to a private address (KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE is off)');
      expect(await send({ url: `http://127.0.0.1:${port}/hook`, headers: {}, body: '{}', timeoutMs: 2000 }).catch((e: Error) => e.message)).to.equal(
        '127.0.0.1 resolves to a private address (KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE is off)',
      );
      // Allowed, the same receiver answers.
      expect((await webhookSender({ allowPrivate: true })({ url: `http://127.0.0.1:${port}/hook`, headers: {}, body: '{}', timeoutMs: 2000 })).status).to.equal(200);
    } finally {
      receiver.close();
    }
  });
});
