/**
 * A first throughput figure: durable PUTs from one client, one at a
 * time, then from 16 at once, against a real server on loopback. Prints a
 * table; run with `npx tsx test/bench/sequentialPut.ts [count]`.
 * The full benchmark suite against anchors is `npm run bench` (see README, Performance).
 */
import { api, startTestServer } from '../support/server.js';
import { commitCount } from '../support/git.js';

const count = Number(process.argv[2] ?? 500);
const server = await startTestServer();
try {
  const put = async (i: number): Promise<void> => {
    const res = await api(`${server.url}/api/v1/knowledge/items/bench/f${i % 100}/item-${i % 1000}.md`, {
      method: 'PUT',
      key: server.adminKey,
      body: { content: `version ${i}\n` },
    });
    if (res.status !== 200) throw new Error(`PUT ${i}: ${res.status} ${JSON.stringify(res.body)}`);
  };
  const before = await commitCount(server.gitdir());
  let t = performance.now();
  for (let i = 0; i < count; i++) await put(i);
  const sequential = count / ((performance.now() - t) / 1000);

  const writers = 16;
  t = performance.now();
  let next = count;
  await Promise.all(
    Array.from({ length: writers }, async () => {
      while (next < 2 * count) await put(next++);
    }),
  );
  const parallel = count / ((performance.now() - t) / 1000);
  const commits = (await commitCount(server.gitdir())) - before;
  console.log(`| writers | PUTs | PUT/s (durable) |`);
  console.log(`|---|---|---|`);
  console.log(`| 1 | ${count} | ${sequential.toFixed(0)} |`);
  console.log(`| ${writers} | ${count} | ${parallel.toFixed(0)} |`);
  console.log(`commits made: ${commits} for ${2 * count} PUTs (one each)`);
} finally {
  await server.close();
}
