import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as nodeFs } from 'node:fs';
import { git } from './git.js';

/** What C git says a repository holds: every object's type and bytes (`git cat-file --batch`). */
export type Expected = Map<string, { type: string; body: Buffer }>;

/** Runs git with `input` on stdin; resolves with stdout (bytes). */
export function gitWithInput(args: string[], input: Buffer | string, gitdir: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['--git-dir', gitdir, ...args]);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`git ${args.join(' ')}: ${Buffer.concat(err).toString()}`))));
    child.stdin.end(input);
  });
}

/** `n` bytes that do not compress (a hash chain), the same for the same seed. */
export function noise(seed: string, n: number): Buffer {
  const out = Buffer.alloc(n);
  let block = createHash('sha256').update(seed).digest();
  for (let at = 0; at < n; at += 32) {
    block = createHash('sha256').update(block).digest();
    block.copy(out, at);
  }
  return out;
}

/** Version `v` of text file `f`: 200 lines, one of them changed per version (good delta material). */
function textFile(f: number, v: number): Buffer {
  const lines = Array.from({ length: 200 }, (_, k) => `file ${f} line ${k}: the quick brown fox jumps over the lazy dog`);
  for (let k = 0; k <= v % 40; k++) lines[(k * 7 + f) % 200] = `file ${f} line changed in version ${k}`;
  return Buffer.from(`${lines.join('\n')}\n`);
}

/**
 * A repository of `commits` commits written by `git fast-import`: 20 text files in 3 folders,
 * each commit changing one, and a 1.5 MiB file that does not compress, changed every 25 commits
 * (a large object, and large deltas).
 */
export async function fastImport(gitdir: string, commits: number): Promise<void> {
  await git(['init', '--bare', '-q', '-b', 'main', gitdir]);
  const parts: Buffer[] = [];
  const data = (bytes: Buffer): void => {
    parts.push(Buffer.from(`data ${bytes.byteLength}\n`), bytes, Buffer.from('\n'));
  };
  const large = noise('large', 1_500_000);
  for (let i = 0; i < commits; i++) {
    parts.push(Buffer.from(`commit refs/heads/main\ncommitter Test <test@example.com> ${1_700_000_000 + i} +0000\n`));
    data(Buffer.from(`commit ${i}\n\nItem-Id: x${i}\n`));
    const f = i % 20;
    parts.push(Buffer.from(`M 100644 inline d${f % 3}/f${f}.txt\n`));
    data(textFile(f, Math.floor(i / 20)));
    if (i % 25 === 0) {
      const version = Buffer.from(large);
      version.write(`version ${i}`, (i * 4099) % (large.byteLength - 20));
      parts.push(Buffer.from('M 100644 inline big.bin\n'));
      data(version);
    }
  }
  await gitWithInput(['fast-import', '--quiet'], Buffer.concat(parts), gitdir);
}

/** Every object of the repository as C git reads it. */
export async function catAll(gitdir: string): Promise<Expected> {
  const ids = (await git(['cat-file', '--batch-all-objects', '--batch-check=%(objectname)'], { gitdir })).trim().split('\n');
  const out = await gitWithInput(['cat-file', '--batch'], `${ids.join('\n')}\n`, gitdir);
  const expected: Expected = new Map();
  let at = 0;
  while (at < out.byteLength) {
    const eol = out.indexOf(0x0a, at);
    const [oid, type, size] = out.toString('latin1', at, eol).split(' ') as [string, string, string];
    const body = out.subarray(eol + 1, eol + 1 + Number(size));
    expected.set(oid, { type, body });
    at = eol + 1 + Number(size) + 1;
  }
  return expected;
}

/** The entry types (1-4 whole, 6 OFS_DELTA, 7 REF_DELTA) of a pack's entries, counted. */
export async function entryTypes(packPath: string): Promise<Map<number, number>> {
  const idx = await gitWithInput(['show-index'], await nodeFs.readFile(packPath.replace(/\.pack$/, '.idx')), '/nonexistent');
  const pack = await nodeFs.readFile(packPath);
  const counts = new Map<number, number>();
  for (const line of idx.toString().trim().split('\n')) {
    const type = ((pack[Number(line.split(' ')[0])] as number) >> 4) & 7;
    counts.set(type, (counts.get(type) ?? 0) + 1);
  }
  return counts;
}

export async function packsIn(gitdir: string): Promise<string[]> {
  return (await nodeFs.readdir(`${gitdir}/objects/pack`)).filter((n) => n.endsWith('.pack')).map((n) => `${gitdir}/objects/pack/${n}`);
}
