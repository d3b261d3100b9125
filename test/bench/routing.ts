/**
 * README, Scaling: two figures behind "what breaks first".
 * 1. The key files at 1,000 to 100,000 keys on one node: keys.json's size, its read at the start, one
 *    lookup, one key made (a line appended to keys.log under the lock), the lookup after it (what this
 *    process wrote is not read back), a usage flush of 1,000 keys, another process's revocation and the
 *    lookup that reads it (the log's new line only), and a fold of the log into keys.json (what every
 *    change cost before the log: the whole file rewritten). `--keys-only` measures the key files alone.
 * 2. What HAProxy (scripts/haproxy.cfg) adds to a GET: autocannon against one node directly and
 *    through the proxy, 16 connections, alternating, best of 2 each. Needs `haproxy` on the PATH.
 * Alone: `npx tsx test/bench/routing.ts` (about a minute; prints the load average with each figure).
 */
import { promises as nodeFs } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { silentLogger } from '../../src/common/log.js';
import { createKey, hashSecret } from '../../src/domain/keys.js';
import type { FsPromises } from '../../src/storage/fs/fs.js';
import { KeyStore, type KeyRecord } from '../../src/storage/keys/keyStore.js';
import { ensureBuilt, killAllChildren } from '../support/child.js';
import { tmpDir } from '../support/tmp.js';
import { createOrg, startNode, startProxy } from '../scaling/cluster.js';

const fs = nodeFs as unknown as FsPromises;
const load = (): string => loadavg().map((l) => l.toFixed(2)).join(' ');

async function keyFile(dir: string, count: number): Promise<void> {
  const dataDir = join(dir, `keys-${count}`);
  await nodeFs.mkdir(dataDir, { recursive: true });
  const keys: KeyRecord[] = [];
  for (let i = 0; i < count; i++) {
    keys.push({
      id: `key_${i.toString(16).padStart(16, '0')}`,
      orgId: `org-${i % 1000}`,
      name: `key ${i}`,
      role: 'writer',
      hash: hashSecret(`ks_org-${i % 1000}_${i.toString().padStart(43, 'x')}`),
      createdAt: new Date(0).toISOString(),
      revokedAt: null,
      lastUsedAt: new Date(0).toISOString(),
    });
  }
  await nodeFs.writeFile(join(dataDir, 'keys.json'), `${JSON.stringify({ version: 1, keys }, null, 2)}\n`);
  const size = (await nodeFs.stat(join(dataDir, 'keys.json'))).size;
  const store = new KeyStore({ fs, dataDir, logger: silentLogger });
  const probe = keys[count >> 1]?.hash as string;
  let t = performance.now();
  await store.findByHash(probe);
  const reread = performance.now() - t;
  t = performance.now();
  for (let i = 0; i < 1000; i++) await store.findByHash(probe);
  const lookup = (performance.now() - t) / 1000;
  t = performance.now();
  await createKey({ keys: store, orgId: 'org-1', role: 'reader', name: 'new' });
  const create = performance.now() - t;
  t = performance.now();
  await store.findByHash(probe);
  const afterOwn = performance.now() - t;
  for (const k of keys.slice(0, 1000)) store.noteUsed(k.id, new Date());
  t = performance.now();
  await store.flushUsage();
  const flush = performance.now() - t;
  t = performance.now();
  await store.findByHash(probe);
  const afterFlush = performance.now() - t;
  // Another process (the CLI) revokes a key: the next lookup here reads the log's new line.
  await new KeyStore({ fs, dataDir, logger: silentLogger }).update(keys[1]?.id as string, (k) => void (k.revokedAt = new Date().toISOString()));
  t = performance.now();
  await store.findByHash(probe);
  const afterOther = performance.now() - t;
  // A fold: the log written into keys.json (a change made with a fold after every change).
  const folding = new KeyStore({ fs, dataDir, logger: silentLogger, foldWhen: () => true });
  await folding.findByHash(probe);
  t = performance.now();
  await folding.update(keys[2]?.id as string, (k) => void (k.revokedAt = new Date().toISOString()));
  const fold = performance.now() - t;
  console.log(
    `key files, ${count.toLocaleString('en')} keys: keys.json ${(size / 1048576).toFixed(1)} MiB; read at the start ${reread.toFixed(1)} ms; ` +
      `lookup (stats + map) ${(lookup * 1000).toFixed(0)} µs; key create (a line under the lock) ${create.toFixed(1)} ms, next lookup ${afterOwn.toFixed(1)} ms; ` +
      `usage flush (1,000 keys) ${flush.toFixed(1)} ms, next lookup ${afterFlush.toFixed(1)} ms; another process's revocation, next lookup ` +
      `${afterOther.toFixed(1)} ms; a fold into keys.json ${fold.toFixed(1)} ms; load ${load()}`,
  );
}

async function proxyOverhead(dir: string): Promise<void> {
  await ensureBuilt();
  const dataDir = join(dir, 'node-a');
  const key = await createOrg(dataDir, 'acme');
  // No per-key rate limit: the load generator sends one key's requests by the ten thousand.
  const node = await startNode('node-a', dataDir, ['--rate-limit-per-key', '0']);
  const proxy = await startProxy({ dir, nodes: [node, { ...node, name: 'node-b' }], orgMap: 'acme node-a\n' });
  try {
    const path = '/api/v1/knowledge/items/notes/a.md';
    const put = await fetch(`${node.serve.url}${path}`, { method: 'PUT', headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ content: 'x'.repeat(500) }) });
    if (put.status !== 200) throw new Error(`PUT: ${put.status}`);
    const run = async (base: string): Promise<{ rps: number; p99: number }> => {
      const r = await autocannon({ url: `${base}${path}`, connections: 16, duration: 5, headers: { Authorization: `Bearer ${key}` } });
      if (r.non2xx > 0 || r.errors > 0) throw new Error(`${base}: ${r.non2xx} non-2xx, ${r.errors} errors`);
      return { rps: r.requests.average, p99: r.latency.p99 };
    };
    const best = { direct: { rps: 0, p99: 0 }, proxy: { rps: 0, p99: 0 } };
    for (let round = 0; round < 2; round++) {
      for (const [name, base] of [['direct', node.serve.url], ['proxy', proxy.url]] as const) {
        const r = await run(base);
        if (r.rps > best[name].rps) best[name] = r;
        console.log(`  round ${round + 1}, ${name}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99} ms; load ${load()}`);
      }
    }
    console.log(
      `GET item, 16 connections: direct ${best.direct.rps.toFixed(0)} req/s (p99 ${best.direct.p99} ms), ` +
        `through HAProxy ${best.proxy.rps.toFixed(0)} req/s (p99 ${best.proxy.p99} ms): ${(best.proxy.rps / best.direct.rps).toFixed(2)}×`,
    );
  } finally {
    await proxy.stop();
    await killAllChildren();
  }
}

const work = await tmpDir('ks-bench-routing');
try {
  console.log(`node ${process.version}, load average ${load()}`);
  for (const count of [1_000, 10_000, 100_000]) await keyFile(work.dir, count);
  if (!process.argv.includes('--keys-only')) await proxyOverhead(work.dir);
} finally {
  await work.cleanup();
}
