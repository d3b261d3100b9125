import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import { cli, cliServer, closedPort } from './support/cliRun.js';
import { Receiver, type Received } from './support/receiver.js';
import { api } from './support/server.js';
import type { WebhookView } from '../src/domain/webhooks.js';
import { sleep } from './support/sleep.js';

/** A delivery as GET /webhooks/{id}/deliveries answers it (README, Webhooks (admin)). */
type Delivery = NonNullable<WebhookView['lastDelivery']>;

/**
 * `knowledge-store folder ls|get|set` and `webhook add|ls|rm|deliveries` as child processes against a real server
 * on a real port (test/support/cliRun.ts): each the admin route it stands for, refused with the server's own
 * message (exit 1), and a wrong command line refused before anything is sent (exit 2).
 */
describe('cli folder commands (against a running server)', function () {
  // Each command is a child process, and a webhook test waits for deliveries: the limit is for a hang, not for speed.
  this.timeout(120_000);
  const cs = cliServer();
  const { ok, fails } = cs;

  it('set puts a rule in effect at once: get and ls show it, a reader key no longer reads under it', async () => {
    const reader = await cs.server.key('reader');
    await ok(['item', 'put', 'board/minutes.md'], { input: 'secret plans\n' });
    expect(await ok(['item', 'get', 'board/minutes.md'], { key: reader })).to.equal('secret plans\n');
    expect(await ok(['folder', 'ls'])).to.equal('No folder rules.\n');
    expect(await ok(['folder', 'get', 'board/'])).to.equal('board/\tinherit\tinherit\t-\n');

    expect(await ok(['folder', 'set', 'board/', '--read', 'knowledge:admin'])).to.equal('Set board/: read knowledge:admin, write inherit\n');
    const line = await ok(['folder', 'get', 'board/']);
    expect(line).to.match(/^board\/\tknowledge:admin\tinherit\t\d{4}-\d\d-\d\dT[\d:.]+Z\n$/);
    expect(await ok(['folder', 'get', 'board']), 'with or without the slash').to.equal(line);
    expect(await ok(['folder', 'ls'])).to.equal(line);
    const fromApi = await api(`${cs.server.url}/api/v1/knowledge/folders`, { key: cs.server.adminKey });
    expect(JSON.parse(await ok(['folder', 'ls', '--json']))).to.deep.equal(fromApi.body?.data?.folders);
    expect(JSON.parse(await ok(['folder', 'get', 'board/', '--json']))).to.deep.equal((fromApi.body?.data?.folders as unknown[])[0]);

    await fails(['item', 'get', 'board/minutes.md'], 1, /^knowledge-store: Knowledge item not found\n$/, { env: { KNOWLEDGE_KEY: reader } });
    const hidden = await api(`${cs.server.url}/api/v1/knowledge/items/board/minutes.md`, { key: reader });
    expect(hidden.status).to.equal(404);
    expect(await ok(['item', 'get', 'board/minutes.md']), 'an admin still reads it').to.equal('secret plans\n');
    // Cleared, so that the next test starts with no rule.
    await ok(['folder', 'set', 'board/', '--read', 'inherit']);
  });

  it('an option left out keeps its value; inherit for both removes the rule, and the reader reads again', async () => {
    const reader = await cs.server.key('reader');
    await ok(['item', 'put', 'plans/q1.md'], { input: 'q1\n' });
    await ok(['folder', 'set', 'plans/', '--read', 'knowledge:admin']);
    expect(await ok(['folder', 'set', 'plans', '--write', 'knowledge:admin'])).to.equal('Set plans/: read knowledge:admin, write knowledge:admin\n');
    await fails(['item', 'put', 'plans/q2.md'], 1, /^knowledge-store: Forbidden — requires knowledge:admin permission\n$/, { env: { KNOWLEDGE_KEY: cs.writerKey }, input: 'q2\n' });
    expect(await ok(['folder', 'set', 'plans/', '--read', 'inherit', '--write', 'inherit'])).to.equal('No rule for plans/ (read and write inherit)\n');
    expect(await ok(['folder', 'ls'])).to.equal('No folder rules.\n');
    expect(await ok(['item', 'get', 'plans/q1.md'], { key: reader })).to.equal('q1\n');
  });

  it('a writer key is refused with the server\'s message (exit 1), and the rule stays as it was', async () => {
    await ok(['folder', 'set', 'hr/', '--read', 'knowledge:write']);
    const before = await ok(['folder', 'get', 'hr/']);
    await fails(['folder', 'set', 'hr/', '--read', 'inherit'], 1, /^knowledge-store: Forbidden — requires knowledge:admin permission\n$/, { env: { KNOWLEDGE_KEY: cs.writerKey } });
    await fails(['folder', 'ls'], 1, /^knowledge-store: Forbidden — requires knowledge:admin permission\n$/, { env: { KNOWLEDGE_KEY: cs.writerKey } });
    const run = await fails(['folder', 'get', 'hr/', '--json'], 1, /./, { env: { KNOWLEDGE_KEY: cs.writerKey } });
    expect(JSON.parse(run.stderr)).to.deep.equal({ error: 'Forbidden — requires knowledge:admin permission', code: 'API_ERROR', status: 403 });
    expect(await ok(['folder', 'get', 'hr/'])).to.equal(before);
    // What only the server can tell, it tells: a folder name it does not take.
    await fails(['folder', 'get', 'HR/'], 1, /^knowledge-store: Invalid path: only lowercase letters/);
  });

  it('a wrong command line exits 2 and sends nothing (no server listens at the URL)', async () => {
    const env = { KNOWLEDGE_URL: `http://127.0.0.1:${await closedPort()}` };
    await fails(['folder', 'set', 'x/', '--read', 'everyone'], 2, /option '--read <permission>' argument 'everyone' is invalid\. Allowed choices are inherit, knowledge:read, knowledge:write, knowledge:admin/, { env });
    await fails(['folder', 'set', 'x/', '--write', 'knowledge:read'], 2, /option '--write <permission>' argument 'knowledge:read' is invalid/, { env });
    await fails(['folder', 'set', 'x/'], 2, /^knowledge-store: give --read <permission>, --write <permission> or both\n$/, { env });
    await fails(['folder', 'set', '--read', 'inherit'], 2, /missing required argument 'folder\/'/, { env });
    await fails(['folder', 'get', '/'], 2, /^knowledge-store: give a folder, e.g\. docs\/\n$/, { env });
    await fails(['folder', 'get'], 2, /missing required argument/, { env });
    // The same lines, well formed, do try the URL: the refusals above were the command line's.
    await fails(['folder', 'set', 'x/', '--read', 'inherit'], 1, /cannot reach .*connection refused/, { env });
  });
});

describe('cli webhook commands (against a running server, delivering to 127.0.0.1)', function () {
  // Each command is a child process, and a webhook test waits for deliveries: the limit is for a hang, not for speed.
  this.timeout(120_000);
  // The receiver is on this machine, a private address the default refuses; a failed attempt is retried at once.
  const cs = cliServer({ webhooks: { allowPrivate: true, retryBaseMs: 100, timeoutMs: 2000 } });
  const { ok, fails } = cs;
  let receiver: Receiver;
  beforeEach(async () => {
    receiver = await Receiver.start();
  });
  afterEach(async () => {
    await receiver.close();
  });

  /** `webhook add`, which prints the secret alone on stdout and the hook's id on stderr: both. */
  async function add(args: string[]): Promise<{ id: string; secret: string; stderr: string }> {
    const run = await cli(['webhook', 'add', receiver.url, ...args], { env: { KNOWLEDGE_URL: cs.server.url, KNOWLEDGE_KEY: cs.server.adminKey } });
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout).to.match(/^whsec_[\w-]{20,}\n$/);
    const id = /^Created webhook (wh_\w+) /.exec(run.stderr)?.[1];
    expect(id, run.stderr).to.be.a('string');
    return { id: id as string, secret: run.stdout.trimEnd(), stderr: run.stderr };
  }

  /** The hook's deliveries once `done` holds of them, asked of the API until a deadline (deliveries are asynchronous). */
  async function deliveriesWhen(id: string, done: (d: Delivery[]) => boolean): Promise<Delivery[]> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const res = await api(`${cs.server.url}/api/v1/knowledge/webhooks/${id}/deliveries`, { key: cs.server.adminKey });
      const deliveries = (res.body?.data as { deliveries: Delivery[] }).deliveries;
      if (done(deliveries)) return deliveries;
      if (Date.now() > deadline) throw new Error(`timed out waiting for the deliveries of ${id}: ${JSON.stringify(deliveries)}`);
      await sleep(100);
    }
  }

  it('add prints the secret once; ls shows the hook; a write is delivered and deliveries shows it; rm; ls is empty', async () => {
    expect(await ok(['webhook', 'ls'])).to.equal('No webhooks.\n');
    const hook = await add(['--event', 'created', '--prefix', 'hooked/']);
    expect(hook.stderr).to.equal(`Created webhook ${hook.id} for ${receiver.url} (created; hooked/). Its signing secret, shown once:\n`);
    expect((await ok(['webhook', 'ls'])).split('\t')).to.deep.equal([hook.id, 'active', receiver.url, 'created', 'hooked/', 'none yet\n']);
    expect(await ok(['webhook', 'ls']), 'the secret is never listed').not.to.include(hook.secret);

    await ok(['item', 'put', 'elsewhere/a.md'], { input: 'not under the prefix\n' });
    await ok(['item', 'put', 'hooked/a.md'], { input: 'hello\n' });
    const [delivery] = await deliveriesWhen(hook.id, (d) => d[0]?.status === 'delivered');
    expect(receiver.delivered).to.have.length(1);
    const sent = receiver.delivered[0] as Received;
    // The secret printed is the one the server signs with.
    expect(sent.headers['x-knowledge-signature']).to.equal(`sha256=${createHmac('sha256', hook.secret).update(sent.body).digest('hex')}`);
    const body = JSON.parse(sent.body) as { commitId: string; changes: Array<{ path: string; change: string }> };
    expect(body.changes.map((c) => [c.path, c.change])).to.deep.equal([['hooked/a.md', 'created']]);

    const lines = (await ok(['webhook', 'deliveries', hook.id])).trimEnd().split('\n').map((l) => l.split('\t'));
    expect(lines).to.have.length(1);
    const [at, id, commit, status, http, ms, error] = lines[0] as string[];
    expect([id, commit, status, http, error]).to.deep.equal([delivery?.id, body.commitId.slice(0, 12), 'delivered', '200', '-']);
    expect(at).to.equal(delivery?.attempts[0]?.at);
    expect(ms).to.match(/^\d+ms$/);
    expect(JSON.parse(await ok(['webhook', 'deliveries', hook.id, '--json']))).to.deep.equal(await deliveriesWhen(hook.id, () => true));
    expect((await ok(['webhook', 'ls'])).split('\t')[5]).to.equal(`delivered ${body.commitId.slice(0, 12)}\n`);

    expect(await ok(['webhook', 'rm', hook.id])).to.equal(`Deleted webhook ${hook.id}\n`);
    expect(await ok(['webhook', 'ls'])).to.equal('No webhooks.\n');
    await fails(['webhook', 'deliveries', hook.id], 1, /^knowledge-store: Webhook not found\n$/);
    await fails(['webhook', 'rm', hook.id], 1, /^knowledge-store: Webhook not found\n$/);
  });

  it('deliveries prints a line per attempt, newest first: a refused attempt, then the one that got through', async () => {
    receiver.script = [500];
    const run = await cli(['webhook', 'add', receiver.url, '--json'], { env: { KNOWLEDGE_URL: cs.server.url, KNOWLEDGE_KEY: cs.server.adminKey } });
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stderr, '--json: the answer alone').to.equal('');
    const answer = JSON.parse(run.stdout) as { webhook: { id: string; events: string[]; prefix: string | null }; secret: string };
    expect(answer.secret).to.match(/^whsec_/);
    expect(answer.webhook).to.include({ url: receiver.url, prefix: null, state: 'active' });
    expect(answer.webhook.events).to.deep.equal(['created', 'updated', 'deleted']);
    const listed = JSON.parse(await ok(['webhook', 'ls', '--json'])) as Array<Record<string, unknown>>;
    expect(listed).to.deep.equal([{ ...answer.webhook, lastDelivery: null }]);

    await ok(['item', 'put', 'retried/a.md'], { input: 'x\n' });
    await deliveriesWhen(answer.webhook.id, (d) => d[0]?.status === 'delivered');
    const lines = (await ok(['webhook', 'deliveries', answer.webhook.id])).trimEnd().split('\n').map((l) => l.split('\t'));
    expect(lines.map((l) => [l[3], l[4], l[6]])).to.deep.equal([
      ['delivered', '200', '-'],
      ['delivered', '500', 'HTTP 500'],
    ]);
    expect(lines[0]?.[1], 'one delivery, tried twice').to.equal(lines[1]?.[1]);
    expect(Date.parse(lines[0]?.[0] ?? '')).to.be.greaterThan(Date.parse(lines[1]?.[0] ?? ''));
    await ok(['webhook', 'rm', answer.webhook.id]);
  });

  it("refusals are the server's message (exit 1); a wrong command line exits 2 and sends nothing", async () => {
    const forbidden = /^knowledge-store: Forbidden — requires knowledge:admin permission\n$/;
    await fails(['webhook', 'add', receiver.url], 1, forbidden, { env: { KNOWLEDGE_KEY: cs.writerKey } });
    await fails(['webhook', 'ls'], 1, forbidden, { env: { KNOWLEDGE_KEY: cs.writerKey } });
    await fails(['webhook', 'add', 'ftp://127.0.0.1/x'], 1, /^knowledge-store: url must be an absolute http or https URL\n$/);
    await fails(['webhook', 'add', receiver.url, '--prefix', 'docs'], 1, /^knowledge-store: Invalid path: a prefix must end with "\/"\n$/);
    await fails(['webhook', 'add', receiver.url, '--event', 'created', '--event', 'created'], 1, /each once/);
    expect(await ok(['webhook', 'ls']), 'none of them made a hook').to.equal('No webhooks.\n');

    const nowhere = { KNOWLEDGE_URL: `http://127.0.0.1:${await closedPort()}` };
    await fails(['webhook', 'add', receiver.url, '--event', 'moved'], 2, /option '--event <kind>' argument 'moved' is invalid\. must be one of created, updated, deleted/, { env: nowhere });
    await fails(['webhook', 'add'], 2, /missing required argument 'url'/, { env: nowhere });
    await fails(['webhook', 'rm'], 2, /missing required argument 'id'/, { env: nowhere });
    await fails(['webhook', 'deliveries'], 2, /missing required argument 'id'/, { env: nowhere });
    const run = await fails(['webhook', 'add', receiver.url, '--event', 'moved', '--json'], 2, /./, { env: nowhere });
    expect(JSON.parse(run.stderr)).to.include({ code: 'USAGE_ERROR' });
  });
});
