/**
 * What a revert costs over HTTP on a real server: undoing one POST /commits commit of N puts, and
 * undoing a key's changes since a time when that key made M single PUTs (each its own commit) on
 * items that existed before. Prints the figures; sets no target.
 *
 * Run with `npx tsx test/bench/revert.ts [N] [M]` (defaults 1000 and 300).
 */
import { performance } from 'node:perf_hooks';
import { createKey } from '../../src/domain/keys.js';
import { keyStoreOf } from '../http/helpers.js';
import { fsckStrict } from '../support/git.js';
import { api, startTestServer, type ApiResponse } from '../support/server.js';

const N = Number(process.argv[2] ?? 1000);
const M = Number(process.argv[3] ?? 300);
const BASE = '/api/v1/knowledge';

function expectOk(r: ApiResponse, what: string): ApiResponse {
  if (r.status !== 200) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r;
}

const server = await startTestServer();
try {
  const admin = server.adminKey;
  const url = (rest: string): string => `${server.url}${BASE}${rest}`;
  const operations = Array.from({ length: N }, (_, i) => ({ op: 'put', path: `bulk/item-${i}.md`, content: `item ${i}\n` }));
  let t = performance.now();
  const made = expectOk(await api(url('/commits'), { method: 'POST', key: admin, body: { operations } }), 'bulk commit');
  console.log(`for scale, POST /commits of those ${N} puts: ${(performance.now() - t).toFixed(0)} ms`);
  const commitId = (made.body?.data as { commitId: string }).commitId;
  t = performance.now();
  const one = expectOk(await api(url('/revert'), { method: 'POST', key: admin, body: { commitId } }), 'revert of the bulk commit');
  const oneMs = performance.now() - t;
  console.log(`revert of one commit of ${N} puts: ${oneMs.toFixed(0)} ms (${(one.body?.data as { reverted: string[] }).reverted.length} items to the trash)`);

  for (let i = 0; i < M; i += 100) {
    const batch = Array.from({ length: Math.min(100, M - i) }, (_, j) => ({ op: 'put', path: `agent/item-${i + j}.md`, content: `before ${i + j}\n` }));
    expectOk(await api(url('/commits'), { method: 'POST', key: admin, body: { operations: batch } }), 'fixture');
  }
  const { key, secret } = await createKey({ keys: keyStoreOf(server), orgId: 'default', role: 'writer', name: 'bench-agent' });
  const since = new Date().toISOString();
  for (let i = 0; i < M; i++) {
    expectOk(await api(url(`/items/agent/item-${i}.md`), { method: 'PUT', key: secret, body: { content: `agent wrote ${i}\n` } }), 'agent put');
  }
  t = performance.now();
  const undo = expectOk(await api(url('/revert'), { method: 'POST', key: admin, body: { keyId: key.id, since } }), 'revert of the key');
  const keyMs = performance.now() - t;
  console.log(`revert of a key's ${M} single-PUT commits: ${keyMs.toFixed(0)} ms (${(undo.body?.data as { reverted: string[] }).reverted.length} items back)`);
  await fsckStrict(server.gitdir());
  console.log('git fsck --strict: clean');
} finally {
  await server.close();
}
