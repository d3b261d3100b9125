import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { hashSecret } from '../../src/domain/keys.js';
import { ensureBuilt, killAllChildren, runCli } from '../support/child.js';
import { api } from '../support/server.js';
import { tmpDir } from '../support/tmp.js';
import { gitOk } from '../git/support.js';
import { createOrg, nodeOf, startNode, startProxy, type Node, type Proxy } from './cluster.js';

/**
 * README, Scaling > Failover, step by step: node A holds `acme` and dies; its mirror (here a
 * `git clone --mirror`, standing in for replication) and its last key export are restored on node
 * B with `org import --keys`, the map line moves, HAProxy reloads. The same keys (new and legacy)
 * then read the same items through the proxy, from node B; a write A took after the mirror's last
 * update is gone, as the README says.
 */

const API = '/api/v1/knowledge';

describe('scaling: failover of an organization to another node (README runbook)', function () {
  this.timeout(120_000);

  let work: { dir: string; cleanup: () => Promise<void> };
  let a: Node;
  let b: Node;
  let proxy: Proxy;

  before(async () => {
    await ensureBuilt();
    work = await tmpDir('ks-failover');
  });

  after(async () => {
    await proxy?.stop();
    await killAllChildren();
    await work?.cleanup();
  });

  it('restores acme on node B from its mirror and key export; the same keys read the same items there', async () => {
    const adminKey = await createOrg(join(work.dir, 'a'), 'acme');
    const otherKey = await createOrg(join(work.dir, 'b'), 'other');
    a = await startNode('node-a', join(work.dir, 'a'));
    b = await startNode('node-b', join(work.dir, 'b'));
    // A key made before keys named their organization: it must survive the move too.
    const legacyKey = `ks_${Buffer.alloc(32, 0x33).toString('base64url')}`;
    const legacyRecord = { id: 'key_000000000000ac3e', orgId: 'acme', name: 'old', role: 'reader', hash: hashSecret(legacyKey), createdAt: '2024-01-01T00:00:00.000Z', revokedAt: null, lastUsedAt: null };
    const legacyFile = join(work.dir, 'legacy.json');
    await writeFile(legacyFile, JSON.stringify({ kind: 'knowledge-store-keys', version: 1, orgId: 'acme', exportedAt: '2024-01-01T00:00:00.000Z', keys: [legacyRecord] }));
    const added = await runCli(['key', 'import', 'acme', '--file', legacyFile, '--data-dir', a.dataDir]);
    expect(added.code, added.stderr).to.equal(0);
    proxy = await startProxy({ dir: work.dir, nodes: [a, b], orgMap: 'acme node-a\nother node-b\n', legacyKeyMap: `${legacyRecord.hash} acme\n` });

    const at = (path: string, key: string, method = 'GET', body?: unknown): ReturnType<typeof api> => api(`${proxy.url}${API}${path}`, { method, key, body });
    expect((await at('/items/notes/one.md', adminKey, 'PUT', { content: 'first' })).status).to.equal(200);
    expect((await at('/items/notes/two.md', adminKey, 'PUT', { content: 'second', requiredReadPermission: 'knowledge:write' })).status).to.equal(200);
    const writer = await at('/keys', adminKey, 'POST', { name: 'ci', role: 'writer' });
    expect(writer.status).to.equal(200);
    const writerSecret = (writer.body?.data as { secret: string }).secret;
    expect(writerSecret).to.match(/^ks_acme_/);
    const before = await at('', adminKey);
    expect(nodeOf(before)).to.equal('node-a');

    // What the operator keeps up to date while A is healthy: the mirror (replication) and the key export.
    const mirror = join(work.dir, 'acme-mirror.git');
    await gitOk(['clone', '--quiet', '--mirror', join(a.dataDir, 'orgs', 'acme.git'), mirror]);
    const keysFile = join(work.dir, 'acme-keys.json');
    const exported = await runCli(['key', 'export', 'acme', '--out', keysFile, '--data-dir', a.dataDir]);
    expect(exported.code, exported.stderr).to.equal(0);
    expect(exported.stderr).to.include('Exported 3 key(s) of acme');
    const exportText = await readFile(keysFile, 'utf8');
    for (const secret of [adminKey, writerSecret, legacyKey]) expect(exportText).not.to.include(secret.slice(-43));

    // A write after the mirror's last update, then A dies with it.
    expect((await at('/items/notes/late.md', adminKey, 'PUT', { content: 'after the last replication' })).status).to.equal(200);
    await a.serve.kill('SIGKILL');
    const down = await fetch(`${proxy.url}${API}`, { headers: { Authorization: `Bearer ${adminKey}` } });
    expect(down.status, 'acme is down, not answered by another node').to.equal(503);
    await down.arrayBuffer();

    // The runbook: hold acme's requests (503, whatever node is up), restore on B beside its running server,
    // move the map line, reload.
    await writeFile(proxy.orgMap, 'acme maintenance\nother node-b\n');
    await proxy.reload();
    const held = await fetch(`${proxy.url}${API}`, { headers: { 'X-API-Key': adminKey } });
    expect(held.status).to.equal(503);
    await held.arrayBuffer();
    const restored = await runCli(['org', 'import', 'acme', '--from', mirror, '--keys', keysFile, '--data-dir', b.dataDir, '--json']);
    expect(restored.code, restored.stderr).to.equal(0);
    expect(JSON.parse(restored.stdout)).to.deep.include({ orgId: 'acme', items: 2, trashed: 0 });
    expect((JSON.parse(restored.stdout) as { keys: { added: string[] } }).keys.added).to.have.length(3);
    await writeFile(proxy.orgMap, 'acme node-b\nother node-b\n');
    await proxy.reload();

    // The same keys, the same items, from node B.
    const list = await at('', adminKey);
    expect(list.status).to.equal(200);
    expect(nodeOf(list)).to.equal('node-b');
    const paths = (list.body?.data as { items: Array<{ path: string }> }).items.map((i) => i.path).sort();
    expect(paths).to.deep.equal(['notes/one.md', 'notes/two.md']);
    const one = await at('/items/notes/one.md', writerSecret);
    expect(one.status).to.equal(200);
    expect((one.body?.data as { item: { content: string } }).item.content).to.equal('first');
    expect((await at('/items/notes/two.md', writerSecret)).status, 'permissions came back with the repository').to.equal(200);
    const legacy = await api(`${proxy.url}${API}/items/notes/one.md`, { headers: { 'X-API-Key': legacyKey } });
    expect(legacy.status).to.equal(200);
    expect(nodeOf(legacy)).to.equal('node-b');
    expect((await api(`${proxy.url}${API}/items/notes/two.md`, { headers: { 'X-API-Key': legacyKey } })).status, 'a reader still may not read a writer item').to.equal(404);
    // Lost with A's disk: the README says so.
    expect((await at('/items/notes/late.md', adminKey)).status).to.equal(404);
    // B takes writes for acme, and its own organization is untouched.
    expect((await at('/items/notes/three.md', writerSecret, 'PUT', { content: 'on B' })).status).to.equal(200);
    expect((await at('', otherKey)).status).to.equal(200);
    const clone = join(work.dir, 'acme-clone');
    await gitOk(['clone', '--quiet', `http://x:${adminKey}@${new URL(proxy.url).host}/git/acme.git`, clone]);
    expect(await readFile(join(clone, 'notes/three.md'), 'utf8')).to.include('on B');
  });
});
