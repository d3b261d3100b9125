/**
 * What scopes cost a read: `GET /knowledge?prefix=…&limit=100` and `GET /search` with a key without scopes,
 * a key with 1 scope, and a key with 50 scopes (the most a key may hold), on the same store. A scoped list
 * walks its folders' ranges only; a scoped search adds the ranges to the index's SQL.
 * Alone: `npx tsx test/bench/scopes.ts [items, default 10000]` (a fresh test server, about a minute).
 */
import { pathToFileURL } from 'node:url';
import { createKey } from '../../src/domain/keys.js';

const FOLDERS = 100;

async function send(url: string, key: string, method = 'GET', body?: unknown): Promise<void> {
  const res = await fetch(url, {
    method,
    headers: { Authorization: `Bearer ${key}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 200)}`);
}

/** Median of `runs` timings of `fn`, in milliseconds, after two warm-up calls. */
async function median(runs: number, fn: () => Promise<void>): Promise<number> {
  await fn();
  await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    times.push(performance.now() - t);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { startTestServer } = await import('../support/server.js');
  const { keyStoreOf } = await import('../http/helpers.js');
  const items = Number(process.argv[2] ?? 10_000);
  const server = await startTestServer();
  try {
    const base = `${server.url}/api/v1/knowledge`;
    for (let from = 0; from < items; from += 1000) {
      const operations = Array.from({ length: Math.min(1000, items - from) }, (_, j) => {
        const i = from + j;
        return { op: 'put', path: `f${i % FOLDERS}/note-${i}.md`, content: `Note ${i}: tomato basil ${i % 7 === 0 ? 'garlic' : 'onion'}\n` };
      });
      await send(`${base}/commits`, server.adminKey, 'POST', { operations });
    }
    const keys = keyStoreOf(server);
    const scoped = async (n: number): Promise<string> =>
      (await createKey({ keys, orgId: 'default', role: 'reader', name: `bench-${n}`, scopes: Array.from({ length: n }, (_, i) => `f${i * 2}/`) })).secret;
    const who: Array<[string, string]> = [
      ['no scopes', await server.key('reader')],
      ['1 scope', await scoped(1)],
      ['50 scopes', await scoped(50)],
    ];
    console.log(`${items} items in ${FOLDERS} folders; medians of 20 requests`);
    for (const [name, key] of who) {
      const list = await median(20, () => send(`${base}?limit=100&content=false`, key));
      const search = await median(20, () => send(`${base}/search?q=garlic&limit=20`, key));
      console.log(`${name.padEnd(10)} list (100 per page) ${list.toFixed(1)} ms   search "garlic" ${search.toFixed(1)} ms`);
    }
  } finally {
    await server.close();
  }
}
