/**
 * Benchmark fixtures: an organization with N items, one create commit
 * each, plus optionally one "hot" item with V versions, built in seconds.
 *
 * The repository is made by the store itself (`knowledge-store org create`, so
 * its layout, config and first commit are the server's), then every item commit
 * is written by C git's `fast-import` straight into a pack: the item's content at
 * its path and its record at `.knowledge/items/<path>`, the record serialized by
 * the store's own `serializeRecord` and the message by `formatCommitMessage`,
 * authored by the organization's admin key as the server would author it. So the
 * repository is what the server would have written, without a server writing it.
 *
 * Fixtures are cached in `.tmp/bench/fixtures/`, keyed by their sizes and a hash
 * of this file and of the record and message formats; a pristine copy is never
 * served: `copyFixture` gives each run its own data directory.
 *
 * With `contentBytes`, items hold ~that many bytes of markdown-like text from a
 * Zipf vocabulary (corpus.ts), for the search phase, and the fixture records how
 * many items each of the bench's search queries matches; a separate cache entry.
 *
 * Standalone: `npx tsx test/bench/fixtures.ts <items> [--hot <versions>] [--docs <bytes>] [--verify] [--force]`
 * builds (or finds) one and, with --verify, runs `knowledge-store verify` on it.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { cp, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { formatCommitMessage, type ItemAction } from '../../src/storage/repo/commitMessage.js';
import { serializeRecord, LAYOUT, type ItemRecord } from '../../src/storage/repo/itemRecord.js';
import { CLI, ROOT, runCli } from '../support/child.js';
import { textRecord } from '../support/records.js';
import { commitCount, git } from '../support/git.js';
import { countedCorpus } from './corpus.js';
import { loadSettings, progress } from './settings.js';

/** Bump when the generated repository changes shape (paths, contents, authorship). */
const FORMAT_VERSION = 1;
export const ORG_ID = 'bench';
export const PER_FOLDER = 1_000;
export const HOT_PATH = 'hot/item.md';
/** Item i was created at EPOCH + i + 1 seconds; the hot item's versions follow. */
const EPOCH_S = Date.UTC(2024, 0, 1) / 1000;

export interface Fixture {
  name: string;
  /** The pristine data directory: copy it (copyFixture) before serving it. */
  dataDir: string;
  orgId: string;
  /** The admin key of the organization, and its id (the commits' author email). */
  key: string;
  keyId: string;
  items: number;
  hotVersions: number;
  /** Commits on main: the organization's first one, one per item, and the hot item's. */
  commits: number;
  /** Milliseconds spent generating it in this run; null when it came from the cache. */
  generatedMs: number | null;
  /** Repository size on disk, bytes (packs). */
  repoBytes: number;
  /** Size of the corpus items (docContent), or null for the ~200-byte itemContent. */
  contentBytes: number | null;
  /** For a corpus fixture: items matched by each of benchQueries(), by query text. */
  hits: Record<string, number>;
}

interface Meta {
  formatVersion: number;
  items: number;
  hotVersions: number;
  commits: number;
  key: string;
  keyId: string;
  repoBytes: number;
  buildMs: number;
  contentBytes?: number | null;
  hits?: Record<string, number>;
}

/** `bench/f000/item-0000.md` …: at most PER_FOLDER items per folder, the same fan-out at every size. */
export function itemPath(i: number): string {
  return `bench/f${String(Math.floor(i / PER_FOLDER)).padStart(3, '0')}/item-${String(i % PER_FOLDER).padStart(4, '0')}.md`;
}

/** About 200 bytes of markdown, different for each item (and each version). */
export function itemContent(i: number, version = 1): string {
  const filler = 'Knowledge kept as plain files in git: every change a commit, every version still there. ';
  return `# Item ${i}\n\nVersion ${version} of benchmark item ${i}.\n\n${filler}${filler.slice(0, 60)}\n`;
}

/** A fixed UUID v4 per seed, so a fixture is the same bytes every time it is built. */
function uuidOf(seed: string): string {
  const h = createHash('sha256').update(seed).digest('hex');
  const variant = ((parseInt(h[16] as string, 16) & 0x3) | 0x8).toString(16);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

const iso = (seconds: number): string => new Date(seconds * 1000).toISOString();

async function formatHash(corpus: boolean): Promise<string> {
  const h = createHash('sha256').update(String(FORMAT_VERSION));
  const files = [fileURLToPath(import.meta.url), join(ROOT, 'src/storage/repo/itemRecord.ts'), join(ROOT, 'src/storage/repo/commitMessage.ts')];
  if (corpus) files.push(fileURLToPath(new URL('./corpus.ts', import.meta.url)), join(ROOT, 'test/support/random.ts'));
  for (const file of files) {
    h.update(await readFile(file));
  }
  return h.digest('hex').slice(0, 10);
}

/** The fixture of `items` items (and a hot item of `hotVersions` versions), from the cache or built now. */
export async function ensureFixture(args: {
  items: number;
  hotVersions?: number;
  cacheDir?: string;
  verify?: boolean;
  force?: boolean;
  /** Items of ~this many bytes of corpus text (docContent) instead of ~200 bytes. */
  contentBytes?: number;
}): Promise<Fixture> {
  const hotVersions = args.hotVersions ?? 0;
  const contentBytes = args.contentBytes ?? null;
  const cacheDir = args.cacheDir ?? join(loadSettings().outDir, 'fixtures');
  const kind = `items-${args.items}-hot-${hotVersions}${contentBytes === null ? '' : `-docs${contentBytes}`}`;
  const name = `${kind}-${await formatHash(contentBytes !== null)}`;
  const dir = join(cacheDir, name);
  let generatedMs: number | null = null;
  // Fixtures of the same sizes in an older format are of no more use (the 50,000-item one is ~80 MiB).
  const stale = (await readdir(cacheDir).catch(() => [] as string[])).filter((n) => n !== name && new RegExp(`^${kind}-[0-9a-f]{10}$`).test(n));
  for (const old of stale) await rm(join(cacheDir, old), { recursive: true, force: true });
  if (args.force) await rm(dir, { recursive: true, force: true });
  let meta = await readMeta(dir);
  if (!meta) {
    const t = performance.now();
    progress(`fixture ${name}: generating ${args.items} items${hotVersions ? ` + ${HOT_PATH} with ${hotVersions} versions` : ''}`);
    await build({ dir, items: args.items, hotVersions, contentBytes });
    generatedMs = performance.now() - t;
    meta = (await readMeta(dir)) as Meta;
    progress(`fixture ${name}: ${meta.commits} commits in ${(generatedMs / 1000).toFixed(1)} s (${(meta.repoBytes / 1048576).toFixed(1)} MiB)`);
  } else {
    progress(`fixture ${name}: cached (${meta.commits} commits)`);
  }
  const fixture: Fixture = {
    name,
    dataDir: join(dir, 'data'),
    orgId: ORG_ID,
    key: meta.key,
    keyId: meta.keyId,
    items: meta.items,
    hotVersions: meta.hotVersions,
    commits: meta.commits,
    generatedMs,
    repoBytes: meta.repoBytes,
    contentBytes: meta.contentBytes ?? null,
    hits: meta.hits ?? {},
  };
  if (args.verify) await verifyFixture(fixture);
  return fixture;
}

async function readMeta(dir: string): Promise<Meta | null> {
  try {
    const meta = JSON.parse(await readFile(join(dir, 'meta.json'), 'utf8')) as Meta;
    return meta.formatVersion === FORMAT_VERSION ? meta : null;
  } catch {
    return null;
  }
}

/** Builds in a temporary directory beside the cache entry, then renames it in: a killed run leaves no half fixture. */
async function build(args: { dir: string; items: number; hotVersions: number; contentBytes: number | null }): Promise<void> {
  const tmp = `${args.dir}.building-${randomBytes(4).toString('hex')}`;
  await rm(args.dir, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  try {
    const dataDir = join(tmp, 'data');
    const created = await runCli(['org', 'create', ORG_ID, '--json', '--data-dir', dataDir], 60_000);
    if (created.code !== 0) throw new Error(`org create failed: ${created.stderr}`);
    const { key, keyId } = JSON.parse(created.stdout) as { key: string; keyId: string };
    const gitdir = join(dataDir, 'orgs', `${ORG_ID}.git`);
    const base = (await git(['rev-parse', 'refs/heads/main'], { gitdir })).trim();
    const corpus = args.contentBytes === null ? undefined : countedCorpus(args.contentBytes);
    const content = corpus ? corpus.content : (i: number): string => itemContent(i);
    await fastImport(gitdir, commitStream({ base, items: args.items, hotVersions: args.hotVersions, keyId, content }));
    const commits = await commitCount(gitdir);
    const expected = 1 + args.items + args.hotVersions;
    if (commits !== expected) throw new Error(`fixture has ${commits} commits on main, expected ${expected}`);
    const repoBytes = await packBytes(gitdir);
    const meta: Meta = { formatVersion: FORMAT_VERSION, items: args.items, hotVersions: args.hotVersions, commits, key, keyId, repoBytes, buildMs: 0 };
    if (corpus) Object.assign(meta, { contentBytes: args.contentBytes, hits: corpus.hits() });
    await writeFile(join(tmp, 'meta.json'), `${JSON.stringify(meta, null, 2)}\n`);
    await rename(tmp, args.dir);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

async function packBytes(gitdir: string): Promise<number> {
  const out = await git(['count-objects', '-v'], { gitdir });
  const field = (n: string): number => Number(new RegExp(`^${n}: (\\d+)$`, 'm').exec(out)?.[1] ?? 0);
  return (field('size-pack') + field('size')) * 1024;
}

/** The commits, as a `git fast-import` stream, in chunks of a few hundred commits. */
function* commitStream(args: { base: string; items: number; hotVersions: number; keyId: string; content: (i: number) => string }): Generator<string> {
  const author = `admin <${args.keyId}>`;
  let first = true;
  let chunk: string[] = [];
  const commit = (path: string, record: ItemRecord, content: string, action: ItemAction, seconds: number): void => {
    const summary = action === 'create' ? `Create ${path}` : `Update ${path}`;
    const message = formatCommitMessage(summary, { itemId: record.id, itemPath: path, action });
    const recordText = serializeRecord(record);
    chunk.push(
      'commit refs/heads/main\n',
      `author ${author} ${seconds} +0000\n`,
      `committer ${author} ${seconds} +0000\n`,
      data(message),
      first ? `from ${args.base}\n` : '',
      `M 100644 inline ${path}\n`,
      data(content),
      `M 100644 inline ${LAYOUT.recordPath(path)}\n`,
      data(recordText),
      '\n',
    );
    first = false;
  };
  const record = (i: number, path: string, created: number, updated: number): ItemRecord =>
    textRecord(path, { id: uuidOf(`${FORMAT_VERSION}:${path}:${i}`), createdAt: iso(created), createdBy: args.keyId, updatedAt: iso(updated), updatedBy: args.keyId });
  for (let i = 0; i < args.items; i++) {
    const at = EPOCH_S + i + 1;
    const path = itemPath(i);
    commit(path, record(i, path, at, at), args.content(i), 'create', at);
    if (chunk.length >= 5_000) {
      yield chunk.join('');
      chunk = [];
    }
  }
  const hotCreated = EPOCH_S + args.items + 1;
  for (let v = 1; v <= args.hotVersions; v++) {
    const at = hotCreated + v - 1;
    commit(HOT_PATH, record(-1, HOT_PATH, hotCreated, at), itemContent(-1, v), v === 1 ? 'create' : 'update', at);
    if (chunk.length >= 5_000) {
      yield chunk.join('');
      chunk = [];
    }
  }
  chunk.push('done\n');
  yield chunk.join('');
}

const data = (text: string): string => `data ${Buffer.byteLength(text, 'utf8')}\n${text}\n`;

/** Feeds the stream to `git fast-import` (one pack, refs updated at the end), minding back-pressure. */
async function fastImport(gitdir: string, stream: Iterable<string>): Promise<void> {
  const child = spawn('git', ['--git-dir', gitdir, 'fast-import', '--quiet', '--done'], { stdio: ['pipe', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const exited = new Promise<number | null>((resolve) => child.once('close', (code) => resolve(code)));
  child.stdin.on('error', () => undefined); // a failing fast-import stops reading; its exit code tells
  for (const piece of stream) {
    if (!child.stdin.write(piece)) {
      await new Promise<void>((resolve) => {
        const done = (): void => {
          child.stdin.off('drain', done);
          child.off('close', done);
          resolve();
        };
        child.stdin.once('drain', done);
        child.once('close', done);
      });
    }
    if (child.exitCode !== null) break;
  }
  child.stdin.end();
  const code = await exited;
  if (code !== 0) throw new Error(`git fast-import failed (exit ${code}): ${stderr.slice(0, 2000)}`);
}

/** `knowledge-store verify` on the pristine data directory: git fsck --strict, and records against the tree. */
export async function verifyFixture(fixture: Fixture): Promise<{ ms: number; report: string }> {
  const t = performance.now();
  const res = await runCli(['verify', '--json', '--data-dir', fixture.dataDir], 30 * 60_000);
  const ms = performance.now() - t;
  let reports: Array<{ items: number; trashed: number; problems: string[] }> = [];
  try {
    reports = JSON.parse(res.stdout) as typeof reports;
  } catch {
    // reported below
  }
  const report = reports[0];
  const expectedItems = fixture.items + (fixture.hotVersions > 0 ? 1 : 0);
  if (res.code !== 0 || !report || report.problems.length > 0 || report.items !== expectedItems) {
    throw new Error(`verify of fixture ${fixture.name} failed (exit ${res.code}): ${res.stdout.slice(0, 2000)} ${res.stderr.slice(0, 2000)}`);
  }
  const line = `${report.items} items, no problems (${(ms / 1000).toFixed(1)} s)`;
  progress(`fixture ${fixture.name}: knowledge-store verify: ${line}`);
  return { ms, report: line };
}

/** A fresh, servable copy of the fixture's data directory. */
export async function copyFixture(fixture: Fixture, dest: string): Promise<string> {
  await rm(dest, { recursive: true, force: true });
  await mkdir(dest, { recursive: true });
  await cp(fixture.dataDir, dest, { recursive: true });
  return dest;
}

export const gitdirOf = (dataDir: string, orgId = ORG_ID): string => join(dataDir, 'orgs', `${orgId}.git`);

// ---- standalone ----
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const argv = process.argv.slice(2);
  const flag = (name: string): boolean => argv.includes(name);
  const hotAt = argv.indexOf('--hot');
  const docsAt = argv.indexOf('--docs');
  const valueAt = (i: number): boolean => (hotAt !== -1 && i === hotAt + 1) || (docsAt !== -1 && i === docsAt + 1);
  const items = Number(argv.find((a, i) => /^\d+$/.test(a) && !valueAt(i)) ?? 100);
  const hotVersions = hotAt === -1 ? 0 : Number(argv[hotAt + 1]);
  const contentBytes = docsAt === -1 ? undefined : Number(argv[docsAt + 1]);
  await stat(CLI).catch(() => {
    throw new Error(`${CLI} is missing: run npm run build first`);
  });
  const fixture = await ensureFixture({ items, hotVersions, contentBytes, verify: flag('--verify'), force: flag('--force') });
  console.log(JSON.stringify({ ...fixture, key: '(in meta.json)', hits: `${Object.keys(fixture.hits).length} queries` }, null, 2));
}
