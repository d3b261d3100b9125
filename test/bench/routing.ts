/**
 * README, Scaling: two figures behind "what breaks first".
 * 1. The key file at 1,000 to 100,000 keys on one node: its size, the re-read after a change (every
 *    node re-reads keys.json whole when the CLI, the API or the usage flush changes it), one lookup,
 *    one key made (the file rewritten whole under its lock), and the lookup after it (what this process
 *    wrote is not read back) and after a usage flush. `--keys-only` measures the key file alone.
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
  store.noteUsed(keys[0]?.id as string, new Date());
  t = performance.now();
  await store.flushUsage();
  const flush = performance.now() - t;
  t = performance.now();
  await store.findByHash(probe);
  const afterFlush = performance.now() - t;
  console.log(
    `keys.json, ${count.toLocaleString('en')} keys: ${(size / 1048576).toFixed(1)} MiB; re-read after a change ${reread.toFixed(1)} ms; ` +
      `lookup (stat + map) ${(lookup * 1000).toFixed(0)} µs; key create (rewrite under the lock) ${create.toFixed(1)} ms; ` +
      `next lookup ${afterOwn.toFixed(1)} ms; usage flush ${flush.toFixed(1)} ms, next lookup ${afterFlush.toFixed(1)} ms; load ${load()}`,
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
