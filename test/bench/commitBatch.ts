/**
 * `POST /commits` of 100 puts against 100 sequential PUTs of the same items, on the same server in the
 * same run (issue 15's target: the commit ≥ 20× faster). Rounds alternate the two; each writes new
 * content to the same 100 paths, so both create nothing and change everything, every round.
 * `npm run bench` runs it as a phase; alone: `npx tsx test/bench/commitBatch.ts` (a fresh test server).
 */
import { pathToFileURL } from 'node:url';

export interface CommitBatchResult {
  operations: number;
  rounds: number;
  /** Per round, milliseconds. */
  commitMs: number[];
  putsMs: number[];
  /** Best PUT round over best commit round. */
  ratio: number;
}

async function send(url: string, key: string, method: string, body: unknown): Promise<void> {
  const res = await fetch(url, { method, headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 200)}`);
}

const content = (round: number, i: number, how: string): string =>
  `# Note ${i}\n\nRound ${round}, written by ${how}.\n\nKnowledge kept as plain files in git: every change a commit.\n`;

export async function measureCommitVsPuts(args: { url: string; key: string; operations?: number; rounds?: number }): Promise<CommitBatchResult> {
  const { url, key, operations = 100, rounds = 3 } = args;
  const base = `${url}/api/v1/knowledge`;
  const path = (i: number): string => `bench-commits/f${i % 10}/note-${i}.md`;
  // Warm-up: both routes once, and the items exist from here on.
  await send(`${base}/commits`, key, 'POST', { operations: Array.from({ length: operations }, (_, i) => ({ op: 'put', path: path(i), content: content(0, i, 'warm-up') })) });
  for (let i = 0; i < 3; i++) await send(`${base}/items/${path(i)}`, key, 'PUT', { content: content(0, i, 'warm-up PUT') });
  const commitMs: number[] = [];
  const putsMs: number[] = [];
  for (let round = 1; round <= rounds; round++) {
    let t = performance.now();
    for (let i = 0; i < operations; i++) await send(`${base}/items/${path(i)}`, key, 'PUT', { content: content(round, i, 'PUT') });
    putsMs.push(performance.now() - t);
    t = performance.now();
    await send(`${base}/commits`, key, 'POST', { operations: Array.from({ length: operations }, (_, i) => ({ op: 'put', path: path(i), content: content(round, i, 'POST /commits') })) });
    commitMs.push(performance.now() - t);
  }
  return { operations, rounds, commitMs, putsMs, ratio: Math.min(...putsMs) / Math.min(...commitMs) };
}

export function commitBatchText(r: CommitBatchResult): { ours: string; anchor: string } {
  const ms = (xs: number[]): string => xs.map((x) => x.toFixed(1)).join(' / ');
  return {
    ours: `POST /commits of ${r.operations} puts: ${Math.min(...r.commitMs).toFixed(1)} ms (rounds ${ms(r.commitMs)})`,
    anchor: `${r.operations} sequential PUTs: ${Math.min(...r.putsMs).toFixed(1)} ms (rounds ${ms(r.putsMs)})`,
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const { startTestServer } = await import('../support/server.js');
  const server = await startTestServer();
  try {
    const r = await measureCommitVsPuts({ url: server.url, key: server.adminKey, rounds: Number(process.argv[2] ?? 3) });
    const text = commitBatchText(r);
    console.log(`${text.ours}\n${text.anchor}\nratio ${r.ratio.toFixed(1)}× (target ≥ 20×)`);
  } finally {
    await server.close();
  }
}
