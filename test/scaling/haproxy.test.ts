import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { hashSecret } from '../../src/domain/keys.js';
import { operations } from '../../src/http/openapi/document.js';
import { ensureBuilt, killAllChildren, runCli } from '../support/child.js';
import { api, type ApiResponse } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { basicAuth, gitOk, runGit } from '../git/support.js';
import { createOrg, NODES, nodeOf, startNode, startProxy, type Node, type NodeName, type Proxy } from './cluster.js';

/**
 * README, Scaling > Routing: two real nodes behind HAProxy running scripts/haproxy.cfg. Every
 * organization's requests land on the node that holds it, whichever way the key is sent (Bearer,
 * X-API-Key, git's Basic password, a legacy key through its hash map); organizations not in the
 * map go where the consistent hash puts them, always the same node; and every route of the API
 * description answers through the proxy as it does directly.
 */

const API = '/api/v1/knowledge';
/** Pinned in knowledge-orgs.map. */
const PINNED: Record<string, NodeName> = { alpha: 'node-a', beta: 'node-b' };
/** Not in the map: placed by the consistent hash, the way the README tells an operator to place a new one. */
const HASHED = ['gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta', 'iota', 'kappa'];

describe('scaling: HAProxy routes each organization to its node (scripts/haproxy.cfg)', function () {
  this.timeout(120_000);

  let work: { dir: string; cleanup: () => Promise<void> };
  const nodes = new Map<NodeName, Node>();
  let proxy: Proxy;
  /** Each organization's admin key and the node that holds it. */
  const orgs = new Map<string, { key: string; node: NodeName }>();
  let legacyKey: string;

  const via = (path: string, init: RequestInit = {}): Promise<Response> => fetch(`${proxy.url}${path}`, { redirect: 'manual', ...init });
  const bearer = (key: string): Record<string, string> => ({ Authorization: `Bearer ${key}` });

  before(async () => {
    await ensureBuilt();
    work = await tmpDir('ks-haproxy');
    for (const name of NODES) {
      const dataDir = join(work.dir, name);
      for (const [orgId, node] of Object.entries(PINNED)) if (node === name) orgs.set(orgId, { key: await createOrg(dataDir, orgId), node });
      nodes.set(name, await startNode(name, dataDir));
    }
    // A legacy key (ks_ and 43 characters, as keys were made before they named their organization), for beta:
    // added through `key import`, routed through its SHA-256 in the legacy map built from `key export`.
    legacyKey = `ks_${Buffer.alloc(32, 0x5a).toString('base64url')}`;
    const legacyFile = join(work.dir, 'legacy.json');
    const record = { id: 'key_00000000000000be', orgId: 'beta', name: 'old', role: 'reader', hash: hashSecret(legacyKey), createdAt: '2024-01-01T00:00:00.000Z', revokedAt: null, lastUsedAt: null };
    await writeFile(legacyFile, JSON.stringify({ kind: 'knowledge-store-keys', version: 1, orgId: 'beta', exportedAt: '2024-01-01T00:00:00.000Z', keys: [record] }));
    const imported = await runCli(['key', 'import', 'beta', '--file', legacyFile, '--data-dir', node('node-b').dataDir]);
    expect(imported.code, imported.stderr).to.equal(0);
    const exported = await runCli(['key', 'export', 'beta', '--data-dir', node('node-b').dataDir]);
    expect(exported.code, exported.stderr).to.equal(0);
    // The README's `jq -r '.keys[] | "\(.hash) \(.orgId)"'`, in TypeScript.
    const legacyKeyMap = (JSON.parse(exported.stdout) as { keys: Array<{ hash: string; orgId: string }> }).keys.map((k) => `${k.hash} ${k.orgId}\n`).join('');
    const orgMap = `# organization  backend\n${Object.entries(PINNED).map(([o, n]) => `${o} ${n}\n`).join('')}`;
    proxy = await startProxy({ dir: work.dir, nodes: [...nodes.values()], orgMap, legacyKeyMap });

    // Placing a new organization, as the README says: ask the proxy which node the hash picks, create it there.
    for (const orgId of HASHED) {
      const probe = await via(`/git/${orgId}.git/info/refs?service=git-upload-pack`);
      expect(probe.status).to.equal(401);
      const name = nodeOf(probe) as NodeName;
      expect(NODES).to.include(name);
      orgs.set(orgId, { key: await createOrg(node(name).dataDir, orgId), node: name });
    }
  });

  after(async () => {
    await proxy?.stop();
    await killAllChildren();
    await work?.cleanup();
  });

  function node(name: NodeName): Node {
    const n = nodes.get(name);
    if (!n) throw new Error(`no ${name}`);
    return n;
  }

  it('sends every organization to its node, every time, whichever way its key is sent', async () => {
    const placed = new Set<string>();
    for (const [orgId, { key, node: home }] of orgs) {
      placed.add(home);
      const ways: Array<[string, Record<string, string>]> = [
        ['Bearer', bearer(key)],
        ['bearer, lower case, two spaces', { Authorization: `bearer  ${key}` }],
        ['X-API-Key', { 'X-API-Key': key }],
      ];
      for (let round = 0; round < 3; round++) {
        for (const [how, headers] of ways) {
          const res = await via(`${API}`, { headers });
          expect(res.status, `${orgId} by ${how}`).to.equal(200);
          expect(nodeOf(res), `${orgId} by ${how}`).to.equal(home);
          const body = (await res.json()) as { data: { items: unknown[] } };
          expect(body.data.items).to.be.an('array');
        }
        const refs = await via(`/git/${orgId}.git/info/refs?service=git-upload-pack`, { headers: { Authorization: basicAuth(key) } });
        expect(refs.status, `${orgId} by git`).to.equal(200);
        expect(nodeOf(refs)).to.equal(home);
        await refs.arrayBuffer();
      }
    }
    // The hash spreads the unpinned ones over both nodes (the names are fixed, so this is not luck that can change).
    expect([...placed].sort()).to.deep.equal([...NODES]);
  });

  it('routes a legacy key (no organization in it) by its hash in the legacy map', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await via(API, { headers: { 'X-API-Key': legacyKey } });
      expect(res.status).to.equal(200);
      expect(nodeOf(res)).to.equal('node-b');
      await res.arrayBuffer();
    }
  });

  it('sends requests that name no organization to either node', async () => {
    const seen = new Set<string | null>();
    for (let i = 0; i < 8; i++) {
      const res = await via('/healthz');
      expect(res.status).to.equal(200);
      seen.add(nodeOf(res));
      await res.arrayBuffer();
    }
    expect([...seen].sort()).to.deep.equal([...NODES]);
  });

  it("never lets one organization's key reach another's data, through the proxy or by naming it", async () => {
    const alpha = orgs.get('alpha')?.key as string;
    const beta = orgs.get('beta')?.key as string;
    // alpha's key asking for beta's repository: routed by the key to alpha's node, where beta is not.
    const cross = await via('/git/beta.git/info/refs?service=git-upload-pack', { headers: { Authorization: basicAuth(alpha) } });
    expect(nodeOf(cross)).to.equal('node-a');
    expect(cross.status).to.be.oneOf([403, 404]);
    await cross.arrayBuffer();
    // An organization on the same node as alpha: found, and still refused to alpha's key.
    const neighbour = HASHED.find((o) => orgs.get(o)?.node === 'node-a') as string;
    const same = await via(`/git/${neighbour}.git/info/refs?service=git-upload-pack`, { headers: { Authorization: basicAuth(alpha) } });
    expect(same.status).to.be.oneOf([403, 404]);
    await same.arrayBuffer();
    // A key whose organization part was altered: routed to the named organization's node, refused there.
    const altered = `ks_alpha_${beta.slice(-43)}`;
    const res = await api(`${proxy.url}${API}`, { key: altered });
    expect(res.status).to.equal(401);
    expect(res.body?.error).to.equal('Invalid API key');
  });

  it('answers every route of the API description through the proxy, from the organization\'s node', async () => {
    const key = orgs.get('beta')?.key as string;
    const home = 'node-b';
    const done = new Map<string, number>();
    /** One call: its status as the description says for success, from beta's node (or any node when no key is sent). */
    const call = async (operationId: string, res: ApiResponse | Response, status = 200, anyNode = false): Promise<ApiResponse | Response> => {
      const body = res instanceof Response ? '' : JSON.stringify(res.body);
      expect(res.status, `${operationId}: ${body}`).to.equal(status);
      if (anyNode) expect(NODES).to.include(nodeOf(res));
      else expect(nodeOf(res), operationId).to.equal(home);
      done.set(operationId, res.status);
      return res;
    };
    const u = (path: string): string => `${proxy.url}${API}${path}`;
    const json = async (path: string, method = 'GET', body?: unknown): Promise<ApiResponse> => api(u(path), { method, key, body });

    await call('putItem', await json('/items/notes/a.md', 'PUT', { content: 'routing through haproxy' }));
    await json('/items/notes/a.md', 'PUT', { content: 'routing through haproxy, version 2' });
    await call('getItem', await json('/items/notes/a.md'));
    await call('listItems', await json(''));
    await call('search', await json('/search?q=haproxy'));
    await call('getHistory', await json('/history/notes/a.md'));
    await call('diffVersions', await json('/diff/notes/a.md?from=1&to=2'));
    await call('rollback', await json('/rollback', 'POST', { path: 'notes/a.md', version: 1 }));
    await call('moveItem', await json('/move', 'POST', { from: 'notes/a.md', to: 'notes/b.md' }));
    const committed = (await call('commit', await json('/commits', 'POST', { operations: [{ op: 'put', path: 'notes/c.md', content: 'c' }] }))) as ApiResponse;
    await call('revert', await json('/revert', 'POST', { commitId: committed.body?.data?.commitId }));
    // The revert took notes/c.md back out (to the trash): restore it, delete it, purge it.
    await call('listTrash', await json('/trash'));
    await call('restoreItem', await json('/trash/restore', 'POST', { path: 'notes/c.md' }));
    await call('deleteItem', await json('/items/notes/c.md', 'DELETE'));
    await call('purgeItem', await json('/trash/items/notes/c.md', 'DELETE'));
    await call('setFolderRule', await json('/folders/notes', 'PUT', { requiredWritePermission: 'knowledge:admin' }));
    await call('getFolderRule', await json('/folders/notes'));
    await call('listFolderRules', await json('/folders'));
    await call('changesSince', await json('/changes'));
    const created = (await call('createKey', await json('/keys', 'POST', { name: 'bot', role: 'reader' }))) as ApiResponse;
    await call('listKeys', await json('/keys'));
    const bot = (created.body?.data as { key: { id: string } }).key;
    await call('revokeKey', await json(`/keys/${bot.id}`, 'DELETE'));
    await call('putFile', await api(u('/files/docs/readme.txt'), { method: 'PUT', key, body: 'a file through the proxy', headers: { 'Content-Type': 'text/plain' } }));
    const file = await fetch(u('/files/docs/readme.txt'), { headers: bearer(key) });
    expect(await (await call('getFile', file) as Response).text()).to.equal('a file through the proxy');
    const hook = (await call('createWebhook', await json('/webhooks', 'POST', { url: 'https://hooks.example.com/knowledge' }))) as ApiResponse;
    const hookId = (hook.body?.data as { webhook: { id: string } }).webhook.id;
    await call('listWebhooks', await json('/webhooks'));
    await call('webhookDeliveries', await json(`/webhooks/${hookId}/deliveries`));
    await call('deleteWebhook', await json(`/webhooks/${hookId}`, 'DELETE'));
    // No mirror is configured on the nodes: the status says so, from the organization's node.
    const mirrors = (await call('replication', await json('/replication'))) as ApiResponse;
    expect(mirrors.body?.data?.mirrors).to.deep.equal([]);

    // The event stream stays open through the proxy and carries a change made meanwhile.
    const stream = new AbortController();
    const events = await fetch(u('/events'), { headers: { ...bearer(key), Accept: 'text/event-stream' }, signal: stream.signal });
    await call('events', events);
    expect(events.headers.get('Content-Type')).to.match(/^text\/event-stream/);
    const reader = (events.body as ReadableStream<Uint8Array>).getReader();
    await json('/items/notes/live.md', 'PUT', { content: 'seen live' });
    let seen = '';
    while (!seen.includes('notes/live.md')) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      seen += Buffer.from(value).toString('utf8');
    }
    expect(seen).to.include('notes/live.md');
    stream.abort();

    const init = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'proxy-test', version: '1' } } };
    const mcp = await fetch(`${proxy.url}/mcp`, { method: 'POST', headers: { ...bearer(key), 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' }, body: JSON.stringify(init) });
    expect(await (await call('mcp', mcp) as Response).text()).to.include('serverInfo');

    // git: C git clones through the proxy (info/refs, then upload-pack), the key as Basic password.
    const clone = join(work.dir, 'beta-clone');
    const port = new URL(proxy.url).port;
    await gitOk(['clone', '--quiet', `http://x:${key}@127.0.0.1:${port}/git/beta.git`, clone]);
    expect(await readFile(join(clone, 'notes/b.md'), 'utf8')).to.include('routing through haproxy');
    const refs = await fetch(`${proxy.url}/git/beta.git/info/refs?service=git-upload-pack`, { headers: { Authorization: basicAuth(key) } });
    await call('gitInfoRefs', refs);
    await refs.arrayBuffer();
    const uploadPack = await fetch(`${proxy.url}/git/beta.git/git-upload-pack`, {
      method: 'POST',
      headers: { Authorization: basicAuth(key), 'Content-Type': 'application/x-git-upload-pack-request' },
      body: '0000',
    });
    await call('gitUploadPack', uploadPack);
    await uploadPack.arrayBuffer();
    const push = await runGit(['push', '--quiet', 'origin', 'HEAD:main'], { cwd: clone });
    expect(push.code).not.to.equal(0);
    const receive = await fetch(`${proxy.url}/git/beta.git/git-receive-pack`, { method: 'POST', body: '0000' });
    await call('gitReceivePack', receive, 403);
    await receive.arrayBuffer();

    // The routes that need no key, from either node.
    for (const [operationId, path, status] of [
      ['health', '/healthz', 200],
      ['ready', '/readyz', 200],
      ['openapi', '/api/v1/openapi.json', 200],
      ['docs', '/docs', 200],
      ['dashboard', '/dashboard/', 200],
      ['root', '/', 302],
      // Metrics are per node: scraped from each node directly. Through the proxy, `--metrics local` (the
      // default) sees the forwarding headers and refuses, as it should (README, Scaling > Routing).
      ['metrics', '/metrics', 403],
    ] as const) {
      const res = await via(path);
      await call(operationId, res, status, true);
      await res.arrayBuffer();
    }

    const missing = operations.map((o) => o.operationId).filter((id) => !done.has(id));
    expect(missing, 'operations not tried through the proxy').to.deep.equal([]);
  });
});
