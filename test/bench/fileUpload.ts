/**
 * File item uploads (contract §8, issue 13): a 1 MB and a 20 MB PDF, each uploaded a few times to a
 * server of its own process (the build in dist/, as `npm start` runs it), while other clients read
 * an item in a loop. Prints, per size: time to 200, the server's peak RSS (VmHWM, worker threads
 * included), and the other clients' GET latency (p50 / p99 / max) during the uploads.
 *
 *   npm run bench:files          (builds first)   ·   npx tsx test/bench/fileUpload.ts
 *
 * Settings: BENCH_FILE_ROUNDS (default 3), BENCH_FILE_READERS (concurrent readers, default 4).
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { CLI, ROOT } from '../support/child.js';
import { tmpDir } from '../support/tmp.js';
import { sampleAt } from './timing.js';

const ROUNDS = Number(process.env.BENCH_FILE_ROUNDS ?? 3);
const READERS = Number(process.env.BENCH_FILE_READERS ?? 4);

/** A PDF of `bytes` or so: 40 pages of text, the rest an attachment of random (incompressible) bytes, as scanned pages would be. */
async function pdfOf(bytes: number): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let p = 0; p < 40; p++) {
    const page = doc.addPage([595, 842]);
    for (let line = 0; line < 40; line++) page.drawText(`Page ${p + 1}, line ${line + 1}: the quick brown fox jumps over the lazy dog.`, { x: 40, y: 800 - line * 19, size: 10, font });
  }
  const base = (await doc.save()).byteLength;
  await doc.attach(randomBytes(Math.max(0, bytes - base - 2000)), 'scan.bin', { mimeType: 'application/octet-stream' });
  return Buffer.from(await doc.save());
}

async function startServer(dataDir: string): Promise<{ url: string; key: string; pid: number; stop(): Promise<void> }> {
  const proc = spawn(process.execPath, [CLI, 'serve', '--port', '0', '--data-dir', dataDir], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', KNOWLEDGE_RATE_LIMIT_PER_KEY: '0', KNOWLEDGE_DATA_DIR: '', PORT: '', HOST: '' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const ready = new Promise<{ url: string; key: string }>((resolve, reject) => {
    proc.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1];
      const key = /(ks_\S+)/.exec(out)?.[1];
      if (url && key) resolve({ url, key });
    });
    proc.once('exit', () => reject(new Error(`server exited:\n${out}`)));
  });
  const { url, key } = await ready;
  return {
    url,
    key,
    pid: proc.pid as number,
    stop: async () => {
      proc.kill('SIGTERM');
      await new Promise((r) => proc.once('exit', r));
    },
  };
}

/** The process's peak resident set so far, in MB (Linux: VmHWM). */
async function peakRssMb(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  return Number(/VmHWM:\s+(\d+) kB/.exec(status)?.[1] ?? 0) / 1024;
}


async function main(): Promise<void> {
  const tmp = await tmpDir('ks-bench-files');
  const server = await startServer(tmp.dir);
  try {
    const auth = { Authorization: `Bearer ${server.key}` };
    await fetch(`${server.url}/api/v1/knowledge/items/other/read-me.md`, { method: 'PUT', headers: { ...auth, 'Content-Type': 'application/json' }, body: JSON.stringify({ content: '# Read me\n\n'.repeat(100) }) });
    console.log(`file uploads: ${ROUNDS} rounds per size, ${READERS} readers GETting another item meanwhile; server pid ${server.pid}, idle peak RSS ${(await peakRssMb(server.pid)).toFixed(0)} MB`);
    for (const [label, size] of [['1 MB', 1024 * 1024], ['20 MB', 20 * 1024 * 1024]] as const) {
      const pdf = await pdfOf(size);
      const times: number[] = [];
      const latencies: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        let reading = true;
        const readers = Array.from({ length: READERS }, async () => {
          while (reading) {
            const t = performance.now();
            const res = await fetch(`${server.url}/api/v1/knowledge/items/other/read-me.md`, { headers: auth });
            await res.arrayBuffer();
            latencies.push(performance.now() - t);
          }
        });
        await new Promise((r) => setTimeout(r, 100));
        const started = performance.now();
        const res = await fetch(`${server.url}/api/v1/knowledge/files/bench/${label.replace(' ', '').toLowerCase()}-${round}.pdf`, {
          method: 'PUT',
          headers: { ...auth, 'Content-Type': 'application/pdf' },
          body: pdf,
        });
        const body = await res.text();
        if (res.status !== 200) throw new Error(`upload answered ${res.status}: ${body}`);
        times.push(performance.now() - started);
        await new Promise((r) => setTimeout(r, 100));
        reading = false;
        await Promise.all(readers);
      }
      const sorted = [...latencies].sort((a, b) => a - b);
      const t = [...times].sort((a, b) => a - b);
      console.log(
        `${label} PDF (${(pdf.byteLength / 1024 / 1024).toFixed(1)} MiB): time to 200 median ${sampleAt(t, 0.5).toFixed(0)} ms (min ${t[0]?.toFixed(0)}, max ${t[t.length - 1]?.toFixed(0)}); ` +
          `peak RSS ${(await peakRssMb(server.pid)).toFixed(0)} MB; other clients' GET (${sorted.length}) p50 ${sampleAt(sorted, 0.5).toFixed(1)} ms, p99 ${sampleAt(sorted, 0.99).toFixed(1)} ms, max ${sampleAt(sorted, 1).toFixed(1)} ms`,
      );
    }
  } finally {
    await server.stop();
    await tmp.cleanup();
  }
}

await main();
