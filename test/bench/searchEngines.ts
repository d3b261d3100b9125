/*
 * Full-text search engine benchmark for a Node 20 TypeScript server.
 *
 *   npx tsx test/bench/searchEngines.ts                  # N=50000, all default engines + sqlite extras + crash test
 *   N=10000 npx tsx test/bench/searchEngines.ts
 *   ENGINES=sqlite-full,minisearch npx tsx test/bench/searchEngines.ts
 *   CRASH=0 npx tsx test/bench/searchEngines.ts          # skip the crash-consistency test
 *   CHILD_TIMEOUT_S=480 CHILD_RSS_CAP_MB=5000 ...
 *
 * Every engine runs in its own child process (node --expose-gc --max-old-space-size=4096 --import tsx test/bench/searchEngines.ts --child <engine>)
 * so RSS figures do not mix. The child prints one line "RESULT <json>"; the parent prints the combined table and
 * writes .tmp/search-engines/results-<N>.json (results-<N>-<TAG>.json with TAG=...) under the project root; the
 * engines' files live in .tmp/search-engines/data. The engine packages are devDependencies at exact versions, so the
 * README's engine comparison can be reproduced from the repository.
 *
 * Corpus: deterministic (seeded PRNG), Zipf-distributed vocabulary of 30,000 words (pseudo-words + real English
 * words), ~2 KB markdown-like docs with paths like team-3/notes/doc-123.md. Documents are regenerated from their
 * index on demand (genDoc(i, version)), so no engine pays for holding the corpus in memory.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { random } from '../support/random.js';

// The engines are loaded lazily with a CommonJS require (as in the script's original form), so that each child loads
// only its own engine and loading it happens after the memory baseline; `--cold` times the module load too.
const require = createRequire(import.meta.url);
/** This file: the children run it again (`--child`, `--cold`, `--crash-*`). */
const SELF = fileURLToPath(import.meta.url);
const ROOT = path.resolve(path.dirname(SELF), '../..');

const N = Number(process.env.N ?? 50000);
const SEED = Number(process.env.SEED ?? 42);
const VOCAB_SIZE = 30000;
const N_AND = 500;
const N_PHRASE = 200;
const N_PREFIX = 100;
const N_UPDATES = 500;
const UPDATE_PHASE_BUDGET_MS = Number(process.env.UPDATE_BUDGET_MS ?? 90_000);
const QUERY_PHASE_BUDGET_MS = Number(process.env.QUERY_BUDGET_MS ?? 90_000);
const DIR = path.join(ROOT, '.tmp/search-engines');
const DATA = path.join(DIR, 'data');
const CHILD_TIMEOUT_S = Number(process.env.CHILD_TIMEOUT_S ?? 480);
const CHILD_RSS_CAP_MB = Number(process.env.CHILD_RSS_CAP_MB ?? 5000);
const HEAP_CAP_MB = Number(process.env.HEAP_CAP_MB ?? 4096);
const DEFAULT_ENGINES = ['sqlite-full', 'sqlite-column', 'sqlite-wal-excl', 'minisearch', 'flexsearch', 'orama'];

// ---------------------------------------------------------------- PRNG + corpus
function hash32(...xs: number[]) {
  let h = 2166136261 ^ SEED;
  for (const x of xs) {
    h = Math.imul(h ^ (x & 0xffff), 16777619);
    h = Math.imul(h ^ (x >>> 16), 16777619);
  }
  return h >>> 0;
}

const REAL_WORDS = (
  'the of and to in is it that for on with as was be by this are or at from have not an but which they you ' +
  'we all can has more one will there their if about would so what when up out do into its time only some ' +
  'could them other than then now these two may first any like our new also after use how work world word ' +
  'words worry worth worse worst worker workers workflow workflows workspace worm worn worship ' +
  'system data file files index search query server client request response error errors config configuration ' +
  'user users team teams project projects note notes design review release deploy deployment build test tests ' +
  'meeting agenda decision decisions action owner status summary background context problem solution proposal ' +
  'migration database schema table column row rows transaction commit branch merge repository git history ' +
  'document documents markdown page pages link links section sections heading draft final version versions ' +
  'customer product feature features roadmap quarter plan planning goal goals metric metrics latency memory ' +
  'performance cache storage disk network service services api endpoint token session account permission ' +
  'knowledge store stores engine engines result results ranking score snippet phrase prefix update updates ' +
  'café naïve résumé déjà coöperate'
).split(/\s+/).filter(Boolean);

const SYL_C = ['b', 'c', 'd', 'f', 'g', 'h', 'j', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'z', 'br', 'ch', 'st', 'tr', 'pl', 'gr', 'sh', 'th', 'qu', 'kr', 'dr', 'fl'];
const SYL_V = ['a', 'e', 'i', 'o', 'u', 'ai', 'ou', 'ea', 'io', 'y'];
const SYL_E = ['', '', '', 'n', 'r', 's', 'l', 'x', 'nd', 'st', 'm', 'k'];

interface Corpus { vocab: string[]; cdf: Float64Array; total: number }
let _corpus: Corpus | null = null;
function corpus(): Corpus {
  if (_corpus) return _corpus;
  const rng = random(hash32(1));
  const seen = new Set<string>();
  const pseudo: string[] = [];
  while (pseudo.length < VOCAB_SIZE - REAL_WORDS.length) {
    const nsyl = 1 + Math.floor(rng() * 4);
    let w = '';
    for (let s = 0; s < nsyl; s++) {
      w += SYL_C[Math.floor(rng() * SYL_C.length)]! + SYL_V[Math.floor(rng() * SYL_V.length)]!;
      if (s === nsyl - 1) w += SYL_E[Math.floor(rng() * SYL_E.length)];
    }
    if (w.length < 3 || seen.has(w) || REAL_WORDS.includes(w)) continue;
    seen.add(w);
    pseudo.push(w);
  }
  // rank order: the first 60 real (function) words take the top ranks; remaining real words are scattered.
  const vocab: string[] = REAL_WORDS.slice(0, 60);
  const rest = REAL_WORDS.slice(60);
  const positions = new Map<number, string>();
  for (const w of rest) {
    let p: number;
    do p = 60 + Math.floor(Math.pow(rng(), 2) * (VOCAB_SIZE - 60)); while (positions.has(p));
    positions.set(p, w);
  }
  let pi = 0;
  for (let r = 60; r < VOCAB_SIZE; r++) vocab.push(positions.get(r) ?? pseudo[pi++]!);
  const cdf = new Float64Array(VOCAB_SIZE);
  let total = 0;
  for (let r = 0; r < VOCAB_SIZE; r++) { total += 1 / Math.pow(r + 1.5, 1.0); cdf[r] = total; }
  _corpus = { vocab, cdf, total };
  return _corpus;
}
function zipfWord(rng: () => number): string {
  const { vocab, cdf, total } = corpus();
  const u = rng() * total;
  let lo = 0, hi = cdf.length - 1;
  while (lo < hi) { const mid = (lo + hi) >> 1; if (cdf[mid]! < u) lo = mid + 1; else hi = mid; }
  return vocab[lo]!;
}
const FOLDERS = ['notes', 'specs', 'meetings', 'adr', 'howto'];
export interface Doc { id: number; path: string; body: string }
function docPath(i: number) { return `team-${i % 20}/${FOLDERS[(i >> 3) % FOLDERS.length]}/doc-${i}.md`; }
function sentence(rng: () => number, min: number, max: number) {
  const n = min + Math.floor(rng() * (max - min + 1));
  const ws: string[] = [];
  for (let k = 0; k < n; k++) {
    let w = zipfWord(rng);
    const r = rng();
    if (r < 0.02) w = '`' + w + '`';
    else if (r < 0.035) w = '**' + w + '**';
    ws.push(w);
  }
  ws[0] = ws[0]![0]!.toUpperCase() + ws[0]!.slice(1);
  return ws.join(' ') + (rng() < 0.1 ? '?' : '.');
}
function genDoc(i: number, version = 0): Doc {
  const rng = random(hash32(i, version, 7));
  const target = 1800 + Math.floor(rng() * 400);
  let body = `# ${sentence(rng, 3, 6).slice(0, -1)}\n\n`;
  while (body.length < target) {
    const r = rng();
    if (r < 0.12) body += `## ${sentence(rng, 2, 5).slice(0, -1)}\n\n`;
    else if (r < 0.25) {
      const items = 2 + Math.floor(rng() * 4);
      for (let k = 0; k < items; k++) body += `- ${sentence(rng, 3, 9)}\n`;
      body += '\n';
    } else {
      const ns = 2 + Math.floor(rng() * 4);
      const ss: string[] = [];
      for (let k = 0; k < ns; k++) ss.push(sentence(rng, 6, 16));
      if (rng() < 0.2) ss.push(`See [${zipfWord(rng)}](${docPath(Math.floor(rng() * 1e6))}).`);
      body += ss.join(' ') + '\n\n';
    }
  }
  return { id: i, path: docPath(i), body };
}
function tokens(s: string) { return s.toLowerCase().split(/[^\p{L}\p{N}]+/u).filter(Boolean); }

interface Workload { and: [string, string][]; phrase: [string, string][]; prefix: string; updates: number[] }
function workload(): Workload {
  const { vocab } = corpus();
  const rng = random(hash32(99));
  const pick = () => (rng() < 0.5 ? zipfWord(rng) : vocab[Math.floor(rng() * vocab.length)]!); // common-biased vs uniform (mostly rare)
  const and: [string, string][] = [];
  for (let q = 0; q < N_AND; q++) and.push([pick(), pick()]);
  const phrase: [string, string][] = [];
  for (let q = 0; q < N_PHRASE; q++) {
    const t = tokens(genDoc(Math.floor(rng() * N)).body);
    const k = Math.floor(rng() * (t.length - 1));
    phrase.push([t[k]!, t[k + 1]!]);
  }
  const updates: number[] = [];
  for (let q = 0; q < N_UPDATES; q++) updates.push(Math.floor(rng() * N));
  return { and, phrase, prefix: 'wor', updates };
}

// ---------------------------------------------------------------- measurement helpers
const gc: () => void = (globalThis as { gc?: () => void }).gc ?? (() => {});
function fullGc() { for (let k = 0; k < 3; k++) gc(); }
function mem() { fullGc(); const m = process.memoryUsage(); return { rss: m.rss, heap: m.heapUsed, ext: m.external + m.arrayBuffers }; }
const MB = (b: number) => b / 1048576;
/** `e.message` of a caught error, as the script's untyped `catch (e: any)` read it. */
const errorMessage = (e: unknown) => (e as Error).message;
function pct(xs: number[], p: number) {
  if (!xs.length) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}
const now = () => performance.now();
function dirSize(p: string) { let t = 0; for (const f of fs.readdirSync(DATA)) if (f.startsWith(p)) { const st = fs.statSync(path.join(DATA, f)); if (st.isFile()) t += st.size; } return t; }

interface Engine {
  name: string;
  build(docs: (i: number) => Doc, n: number): Promise<void>;
  andQuery(a: string, b: string): Promise<number>; // returns number of hits returned (top 20)
  phraseQuery?(a: string, b: string): Promise<number>;
  prefixQuery?(p: string): Promise<number>;
  update(doc: Doc): Promise<void>;
  diskBytes?(): number;
  extras?(w: Workload): Promise<Record<string, unknown>>;
  close?(): Promise<void>;
  notes: string[];
}

// ---------------------------------------------------------------- engines
function sqliteEngine(variant: 'full' | 'column' | 'wal-excl'): Engine {
  const { Database } = require('node-sqlite3-wasm') as typeof import('node-sqlite3-wasm');
  const file = path.join(DATA, `sqlite-${variant}.db`);
  for (const f of fs.readdirSync(DATA)) if (f.startsWith(`sqlite-${variant}.db`)) fs.rmSync(path.join(DATA, f), { recursive: true, force: true });
  const db = new Database(file);
  const notes: string[] = [];
  db.exec('PRAGMA synchronous=OFF');
  if (variant === 'wal-excl') notes.push('locking_mode=' + JSON.stringify(db.all('PRAGMA locking_mode=EXCLUSIVE')));
  const jm = db.get('PRAGMA journal_mode=WAL');
  let journal = String(jm?.journal_mode);
  notes.push(`journal_mode=WAL -> '${journal}'`);
  if (journal !== 'wal') { journal = String(db.get('PRAGMA journal_mode=TRUNCATE')!.journal_mode); notes.push(`then journal_mode=TRUNCATE -> '${journal}'`); }
  const detail = variant === 'column' ? ', detail=column' : '';
  db.exec(`CREATE VIRTUAL TABLE docs USING fts5(path, body, tokenize='unicode61 remove_diacritics 2'${detail})`);
  const SELECT = `SELECT rowid, path, snippet(docs, 1, '«', '»', '…', 20) AS snip FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, 10.0, 1.0) LIMIT 20`;
  const ins = db.prepare('INSERT INTO docs(rowid, path, body) VALUES (?, ?, ?)');
  const del = db.prepare('DELETE FROM docs WHERE rowid = ?');
  let q = db.prepare(SELECT);
  // node-sqlite3-wasm pitfall: after a statement's step fails (e.g. FTS5 syntax error, or phrase query on detail=column),
  // the NEXT call on that statement throws "Could not reset statement prior to binding new values". Re-prepare on error.
  // Also: finalize() on such a statement re-throws the stale step error (it still frees it), hence the inner try.
  const runQ = (m: string) => { try { return q.all(m); } catch (e) { try { q.finalize(); } catch { /* stale error */ } q = db.prepare(SELECT); throw e; } };
  const qNoSnip = db.prepare(`SELECT rowid, path FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, 10.0, 1.0) LIMIT 20`);
  const quote = (s: string) => '"' + s.replace(/"/g, '""') + '"';
  let closed = false;
  return {
    name: `sqlite-${variant}`,
    notes,
    async build(docs, n) {
      for (let i = 0; i < n; i += 1000) {
        db.exec('BEGIN');
        for (let j = i; j < Math.min(n, i + 1000); j++) { const d = docs(j); ins.run([d.id + 1, d.path, d.body]); }
        db.exec('COMMIT');
      }
    },
    async andQuery(a, b) { return runQ(`${quote(a)} ${quote(b)}`).length; },
    async phraseQuery(a, b) { return runQ(quote(`${a} ${b}`)).length; },
    async prefixQuery(p) { return runQ(`${p}*`).length; },
    async update(d) {
      db.exec('BEGIN');
      del.run(d.id + 1);
      ins.run([d.id + 1, d.path, d.body]);
      db.exec('COMMIT');
    },
    diskBytes: () => dirSize(`sqlite-${variant}.db`),
    async extras(w) {
      const x: Record<string, unknown> = {};
      const t: number[] = [];
      for (const [a, b] of w.and) { const t0 = now(); qNoSnip.all(`${quote(a)} ${quote(b)}`); t.push(now() - t0); }
      x.and_nosnippet_p50_ms = pct(t, 50); x.and_nosnippet_p95_ms = pct(t, 95);
      let t0 = now(); const qc = db.all('PRAGMA quick_check'); x.quick_check_s = (now() - t0) / 1000; x.quick_check = qc.map((r) => r.quick_check).join(',');
      t0 = now();
      try { db.run("INSERT INTO docs(docs) VALUES ('integrity-check')"); x.fts5_integrity_check = 'ok'; } catch (e) { x.fts5_integrity_check = 'ERR ' + errorMessage(e); }
      x.fts5_integrity_check_s = (now() - t0) / 1000;
      x.page_count = db.get('PRAGMA page_count')!.page_count;
      x.rows = db.get('SELECT count(*) AS c FROM docs')!.c;
      x.disk_mb_before_optimize = MB(dirSize(`sqlite-${variant}.db`));
      // 'optimize' merges all FTS5 segments into one; measure its cost and the query speed afterwards
      t0 = now(); db.run("INSERT INTO docs(docs) VALUES ('optimize')"); x.optimize_s = (now() - t0) / 1000;
      const t2: number[] = [];
      for (const [a, b] of w.and) { const t1 = now(); q.all(`${quote(a)} ${quote(b)}`); t2.push(now() - t1); }
      x.and_after_optimize_p50_ms = pct(t2, 50); x.and_after_optimize_p95_ms = pct(t2, 95);
      x.disk_mb_after_optimize = MB(dirSize(`sqlite-${variant}.db`));
      return x;
    },
    async close() {
      if (closed) return; closed = true;
      for (const s of [ins, del, q, qNoSnip]) if (!s.isFinalized) s.finalize(); // must finalize explicitly (wasm heap leak otherwise)
      db.close();
    },
  };
}

function minisearchEngine(): Engine {
  const MiniSearch = require('minisearch') as typeof import('minisearch').default;
  const ms = new MiniSearch<Doc>({ fields: ['path', 'body'], storeFields: [], idField: 'id' });
  return {
    name: 'minisearch',
    notes: ['phrase: not supported natively (n/a)', 'update = ms.replace(doc) (discard + add; vacuum is lazy/async)'],
    async build(docs, n) { for (let i = 0; i < n; i++) ms.add(docs(i)); },
    async andQuery(a, b) { return ms.search(`${a} ${b}`, { combineWith: 'AND' }).slice(0, 20).length; },
    async prefixQuery(p) { return ms.search(p, { prefix: true }).slice(0, 20).length; },
    async update(d) { ms.replace(d); },
    async extras() {
      const t0 = now(); const s = JSON.stringify(ms); const t = now() - t0;
      return { serialized_mb: MB(s.length), serialize_s: t / 1000, dirtCount: ms.dirtCount };
    },
  };
}

/** The part of flexsearch's Document index this benchmark uses. */
interface FlexDocument {
  add(doc: Doc): unknown;
  update(id: number, doc: Doc): unknown;
  search(query: string, options: { limit: number; merge: boolean }): unknown[];
  export(handler: (key: string, data: unknown) => void): Promise<void> | void;
}

function flexsearchEngine(tokenize?: string): Engine {
  const { Document } = require('flexsearch') as { Document: new (options: Record<string, unknown>) => FlexDocument };
  const opts: Record<string, unknown> = { document: { id: 'id', index: ['path', 'body'], store: false } };
  if (tokenize) opts.tokenize = tokenize;
  const idx = new Document(opts);
  const notes = ['phrase: not supported (n/a)', 'AND query = default multi-term search per field, merge:true across fields'];
  if (!tokenize) notes.push("default tokenize 'strict': 'wor' prefix query only matches the exact token 'wor'");
  return {
    name: tokenize ? `flexsearch-${tokenize}` : 'flexsearch',
    notes,
    async build(docs, n) { for (let i = 0; i < n; i++) idx.add(docs(i)); },
    async andQuery(a, b) { return idx.search(`${a} ${b}`, { limit: 20, merge: true }).length; },
    async prefixQuery(p) { return idx.search(p, { limit: 20, merge: true }).length; },
    async update(d) { idx.update(d.id, d); },
    async extras() {
      const t0 = now(); let bytes = 0; let keys = 0;
      await idx.export((key: string, data: unknown) => { keys++; bytes += typeof data === 'string' ? data.length : JSON.stringify(data ?? null).length; });
      return { serialized_mb: MB(bytes), serialize_s: (now() - t0) / 1000, export_chunks: keys };
    },
  };
}

function oramaEngine(): Engine {
  const orama = require('@orama/orama') as typeof import('@orama/orama');
  const db = orama.create({ schema: { path: 'string', body: 'string' } as const });
  return {
    name: 'orama',
    notes: ["documents are kept in Orama's doc store (cannot opt out without a custom component)", 'AND = threshold:0; terms match by prefix unless exact:true', 'phrase: not supported (n/a)'],
    async build(docs, n) { for (let i = 0; i < n; i++) { const d = docs(i); await orama.insert(db, { id: String(d.id), path: d.path, body: d.body }); } },
    async andQuery(a, b) { const r = await orama.search(db, { term: `${a} ${b}`, threshold: 0, limit: 20 }); return r.hits.length; },
    async prefixQuery(p) { const r = await orama.search(db, { term: p, limit: 20 }); return r.hits.length; },
    async update(d) { await orama.update(db, String(d.id), { id: String(d.id), path: d.path, body: d.body }); },
    async extras() {
      const t0 = now(); const raw = await orama.save(db); const s = JSON.stringify(raw);
      return { serialized_mb: MB(s.length), serialize_s: (now() - t0) / 1000 };
    },
  };
}

function makeEngine(name: string): Engine {
  switch (name) {
    case 'sqlite-full': return sqliteEngine('full');
    case 'sqlite-column': return sqliteEngine('column');
    case 'sqlite-wal-excl': return sqliteEngine('wal-excl');
    case 'minisearch': return minisearchEngine();
    case 'flexsearch': return flexsearchEngine();
    case 'flexsearch-forward': return flexsearchEngine('forward');
    case 'orama': return oramaEngine();
  }
  throw new Error('unknown engine ' + name);
}

// ---------------------------------------------------------------- child: run one engine
/**
 * One "RESULT <json>" line of a child: an engine's figures (with `partial: true` while it still runs), a cold open,
 * or a crash check. Only the fields the script computes with are typed.
 */
interface ChildResult {
  [key: string]: unknown;
  engine?: string;
  partial?: boolean;
  notes?: string[];
  build_s?: number;
  rss_delta_mb?: number;
  heap_delta_mb?: number;
  and_p50?: number;
  and_p95?: number;
  phrase_p50?: number | string;
  update_p50?: number;
  extras?: Record<string, unknown>;
}
/** An engine's row in the parent's results: its last child result and how the child ended. */
interface EngineRow extends ChildResult {
  engine: string;
  status: string;
  peak_rss_mb: number;
  wall_s: number;
  stderr_tail?: string;
}
interface CrashRow extends ChildResult {
  mode: string;
  run: number;
  consistent: boolean;
}
interface AllResults {
  n: number;
  started: string;
  versions: Record<string, string>;
  engines: EngineRow[];
  cold: Record<string, unknown>[];
  crash: CrashRow[];
}

function emit(obj: unknown) { process.stdout.write('RESULT ' + JSON.stringify(obj) + '\n'); }
function log(...a: unknown[]) { process.stderr.write(`[${process.argv[3]} ${(process.uptime()).toFixed(1)}s] ` + a.join(' ') + '\n'); }

async function runChild(name: string) {
  fs.mkdirSync(DATA, { recursive: true });
  const w = workload(); // corpus vocab + workload built before the baseline
  const res: ChildResult = { engine: name, n: N, versions: versions() };
  const m0 = mem();
  const eng = makeEngine(name);
  res.notes = eng.notes;
  const t0 = now();
  await eng.build((i) => genDoc(i), N);
  const buildMs = now() - t0;
  // measure the generation cost separately so it can be subtracted mentally
  const g0 = now(); let sink = 0; for (let i = 0; i < Math.min(N, 5000); i++) sink += genDoc(i).body.length; const genPerDoc = (now() - g0) / Math.min(N, 5000);
  res.build_s = buildMs / 1000;
  res.build_rate = N / (buildMs / 1000);
  res.gen_ms_per_doc_included = genPerDoc;
  res.avg_doc_bytes = sink / Math.min(N, 5000);
  const m1 = mem();
  res.rss_delta_mb = MB(m1.rss - m0.rss);
  res.heap_delta_mb = MB(m1.heap - m0.heap);
  res.external_delta_mb = MB(m1.ext - m0.ext);
  res.disk_mb = eng.diskBytes ? MB(eng.diskBytes()) : null;
  log(`built in ${res.build_s.toFixed(1)}s rssΔ ${res.rss_delta_mb.toFixed(0)}MB heapΔ ${res.heap_delta_mb.toFixed(0)}MB`);
  emit({ partial: true, ...res });

  // AND queries (with a phase budget)
  let lat: number[] = []; let hits = 0; let tPhase = now();
  for (const [a, b] of w.and) { const t = now(); hits += await eng.andQuery(a, b); lat.push(now() - t); if (now() - tPhase > QUERY_PHASE_BUDGET_MS) break; }
  res.and_n = lat.length; res.and_p50 = pct(lat, 50); res.and_p95 = pct(lat, 95); res.and_avg_hits = hits / lat.length;
  log(`AND p50 ${res.and_p50!.toFixed(2)} p95 ${res.and_p95!.toFixed(2)} (n=${lat.length})`);
  if (eng.phraseQuery) {
    lat = []; hits = 0; tPhase = now();
    try {
      for (const [a, b] of w.phrase) { const t = now(); hits += await eng.phraseQuery(a, b); lat.push(now() - t); if (now() - tPhase > QUERY_PHASE_BUDGET_MS) break; }
      res.phrase_n = lat.length; res.phrase_p50 = pct(lat, 50); res.phrase_p95 = pct(lat, 95); res.phrase_avg_hits = hits / lat.length;
    } catch (e) { res.phrase_p50 = 'n/a'; res.phrase_error = String((e as { message?: unknown } | null)?.message ?? e); }
  }
  if (eng.prefixQuery) {
    lat = []; hits = 0; tPhase = now();
    for (let k = 0; k < N_PREFIX; k++) { const t = now(); hits += await eng.prefixQuery(w.prefix); lat.push(now() - t); if (now() - tPhase > QUERY_PHASE_BUDGET_MS) break; }
    res.prefix_n = lat.length; res.prefix_p50 = pct(lat, 50); res.prefix_p95 = pct(lat, 95); res.prefix_avg_hits = hits / lat.length;
  }
  emit({ partial: true, ...res });
  // updates
  const newDocs = w.updates.map((id, k) => genDoc(id, 1 + k));
  lat = []; tPhase = now();
  for (const d of newDocs) { const t = now(); await eng.update(d); lat.push(now() - t); if (now() - tPhase > UPDATE_PHASE_BUDGET_MS) break; }
  res.update_n = lat.length; res.update_p50 = pct(lat, 50); res.update_p95 = pct(lat, 95);
  log(`update p50 ${res.update_p50!.toFixed(2)} (n=${lat.length})`);
  const m2 = mem();
  res.rss_after_updates_delta_mb = MB(m2.rss - m0.rss);
  res.disk_mb_after_updates = eng.diskBytes ? MB(eng.diskBytes()) : null;
  emit({ partial: true, ...res });
  if (eng.extras) { try { res.extras = await eng.extras(w); } catch (e) { res.extras = { error: String((e as { message?: unknown } | null)?.message ?? e) }; } }
  if (eng.close) await eng.close();
  res.peak_rss_self_mb = MB(process.resourceUsage().maxRSS * 1024);
  emit(res);
}

function versions() {
  const v: Record<string, string> = { node: process.version };
  for (const p of ['node-sqlite3-wasm', 'minisearch', 'flexsearch', '@orama/orama', 'tsx']) {
    try { v[p] = (JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', p, 'package.json'), 'utf8')) as { version: string }).version; } catch { /* */ }
  }
  return v;
}

// ---------------------------------------------------------------- child: sqlite cold open
async function runCold(variant: string) {
  const file = path.join(DATA, `sqlite-${variant}.db`);
  const t0 = now();
  const { Database } = require('node-sqlite3-wasm') as typeof import('node-sqlite3-wasm');
  const tLoad = now() - t0;
  const t1 = now();
  const db = new Database(file, { fileMustExist: true });
  // a WAL-mode file can only be opened by this VFS (no xShmMap) if locking_mode=EXCLUSIVE is set before the first read
  if (variant === 'wal-excl') db.exec('PRAGMA locking_mode=EXCLUSIVE');
  const tOpen = now() - t1;
  const w = workload();
  const sql = `SELECT rowid, path, snippet(docs, 1, '«', '»', '…', 20) AS snip FROM docs WHERE docs MATCH ? ORDER BY bm25(docs, 10.0, 1.0) LIMIT 20`;
  const t2 = now();
  const r = db.all(sql, `"${w.and[0]![0]}" "${w.and[0]![1]}"`);
  const tFirst = now() - t2;
  const t3 = now();
  db.all(sql, `"${w.and[1]![0]}" "${w.and[1]![1]}"`);
  const tSecond = now() - t3;
  db.close();
  emit({ cold: variant, module_load_ms: tLoad, open_ms: tOpen, first_query_ms: tFirst, first_query_hits: r.length, second_query_ms: tSecond, open_plus_first_query_ms: tOpen + tFirst });
}

// ---------------------------------------------------------------- child: crash writer / checker
const CRASH_DB = path.join(DATA, 'crash.db');
const CRASH_TXN = 500;
async function runCrashWriter() {
  const { Database } = require('node-sqlite3-wasm') as typeof import('node-sqlite3-wasm');
  const db = new Database(CRASH_DB);
  db.exec('PRAGMA synchronous=OFF');
  const mode = process.env.CRASH_MODE ?? 'TRUNCATE';
  if (mode === 'WAL-EXCL') db.exec('PRAGMA locking_mode=EXCLUSIVE');
  const jm = db.get(`PRAGMA journal_mode=${mode === 'WAL-EXCL' ? 'WAL' : mode}`)!.journal_mode;
  db.exec("CREATE VIRTUAL TABLE IF NOT EXISTS docs USING fts5(path, body, tokenize='unicode61 remove_diacritics 2')");
  let next = Number(db.get('SELECT coalesce(max(rowid),0) AS m FROM docs')!.m);
  process.stdout.write(`START ${next} ${jm}\n`);
  const ins = db.prepare('INSERT INTO docs(rowid, path, body) VALUES (?, ?, ?)');
  for (;;) {
    db.exec('BEGIN');
    for (let k = 0; k < CRASH_TXN; k++) { next++; const d = genDoc(next); ins.run([next, d.path, d.body]); }
    db.exec('COMMIT');
    process.stdout.write(`COMMITTED ${next}\n`);
  }
}
async function runCrashCheck() {
  const { Database } = require('node-sqlite3-wasm') as typeof import('node-sqlite3-wasm');
  const out: Record<string, unknown> = {};
  const lockDir = CRASH_DB + '.lock';
  out.stale_lock_dir = fs.existsSync(lockDir);
  for (const s of ['-journal', '-wal']) if (fs.existsSync(CRASH_DB + s)) out['file' + s] = fs.statSync(CRASH_DB + s).size;
  const walExcl = process.env.CRASH_MODE === 'WAL-EXCL';
  try {
    const db = new Database(CRASH_DB);
    try { if (walExcl) db.exec('PRAGMA locking_mode=EXCLUSIVE'); out.before_lock_removal = db.get('PRAGMA integrity_check')!.integrity_check; } catch (e) { out.before_lock_removal = 'ERR ' + errorMessage(e); }
    db.close();
  } catch (e) { out.before_lock_removal = 'OPEN ERR ' + errorMessage(e); }
  if (out.stale_lock_dir) fs.rmdirSync(lockDir);
  const db = new Database(CRASH_DB);
  if (walExcl) db.exec('PRAGMA locking_mode=EXCLUSIVE'); // WAL without xShmMap only opens in exclusive locking mode
  const t0 = now();
  out.integrity_check = db.all('PRAGMA integrity_check').map((r) => r.integrity_check).join(',');
  out.integrity_check_s = (now() - t0) / 1000;
  try { db.run("INSERT INTO docs(docs) VALUES ('integrity-check')"); out.fts5_integrity = 'ok'; } catch (e) { out.fts5_integrity = 'ERR ' + errorMessage(e); }
  out.rows = db.get('SELECT count(*) AS c FROM docs')!.c;
  out.max_rowid = db.get('SELECT coalesce(max(rowid),0) AS m FROM docs')!.m;
  for (const s of ['-journal', '-wal']) out['after' + s] = fs.existsSync(CRASH_DB + s) ? fs.statSync(CRASH_DB + s).size : null;
  db.close();
  emit(out);
}

// ---------------------------------------------------------------- parent
interface ChildOut { results: ChildResult[]; stdout: string; stderr: string; code: number | null; signal: string | null; timedOut: boolean; rssCapped: boolean; peakRssMb: number; wallS: number }
function runNode(args: string[], opts: { timeoutS?: number; onLine?: (l: string, cp: ChildProcess) => void; env?: Record<string, string> } = {}): Promise<ChildOut> {
  return new Promise((resolve) => {
    const t0 = now();
    const cp = spawn(process.execPath, ['--expose-gc', `--max-old-space-size=${HEAP_CAP_MB}`, '--import', 'tsx', SELF, ...args], { cwd: ROOT, env: { ...process.env, ...(opts.env ?? {}) }, stdio: ['ignore', 'pipe', 'pipe'] });
    const o: ChildOut = { results: [], stdout: '', stderr: '', code: null, signal: null, timedOut: false, rssCapped: false, peakRssMb: 0, wallS: 0 };
    let buf = '';
    cp.stdout!.on('data', (d) => {
      o.stdout += d; buf += d;
      let k: number;
      while ((k = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, k); buf = buf.slice(k + 1);
        if (line.startsWith('RESULT ')) o.results.push(JSON.parse(line.slice(7)) as ChildResult);
        opts.onLine?.(line, cp);
      }
    });
    cp.stderr!.on('data', (d) => { o.stderr += d; if (!process.env.QUIET) process.stderr.write(d); });
    const timer = opts.timeoutS ? setTimeout(() => { o.timedOut = true; cp.kill('SIGKILL'); }, opts.timeoutS * 1000) : null;
    const poll = setInterval(() => {
      try {
        const st = fs.readFileSync(`/proc/${cp.pid}/status`, 'utf8');
        const m = /VmRSS:\s+(\d+) kB/.exec(st);
        if (m) { const mb = Number(m[1]) / 1024; o.peakRssMb = Math.max(o.peakRssMb, mb); if (mb > CHILD_RSS_CAP_MB) { o.rssCapped = true; cp.kill('SIGKILL'); } }
      } catch { /* exited */ }
    }, 500);
    cp.on('exit', (code, signal) => { if (timer) clearTimeout(timer); clearInterval(poll); o.code = code; o.signal = signal; o.wallS = (now() - t0) / 1000; resolve(o); });
  });
}

const f = (x: unknown, d = 1) => (typeof x === 'number' && isFinite(x) ? x.toFixed(d) : x == null ? '-' : String(x));
function table(rows: EngineRow[]) {
  const head = ['engine', 'status', 'build s', 'docs/s', 'RSS Δ MB', 'heap Δ MB', 'disk MB', 'AND p50', 'AND p95', 'phrase p50', 'prefix p50', 'update p50', 'peak RSS MB'];
  const body = rows.map((r) => [r.engine, r.status, f(r.build_s, 1), f(r.build_rate, 0), f(r.rss_delta_mb, 0), f(r.heap_delta_mb, 0), f(r.disk_mb, 1), f(r.and_p50, 2), f(r.and_p95, 2), f(r.phrase_p50, 2), f(r.prefix_p50, 2), f(r.update_p50, 2), f(r.peak_rss_mb, 0)]);
  const w = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (c: string[]) => '| ' + c.map((x, i) => x.padEnd(w[i]!)).join(' | ') + ' |';
  return [line(head), '|' + w.map((x) => '-'.repeat(x + 2)).join('|') + '|', ...body.map(line)].join('\n');
}

async function parent() {
  fs.mkdirSync(DATA, { recursive: true });
  const engines = (process.env.ENGINES ?? DEFAULT_ENGINES.join(',')).split(',').filter(Boolean);
  const all: AllResults = { n: N, started: new Date().toISOString(), versions: versions(), engines: [], cold: [], crash: [] };
  const outFile = path.join(DIR, `results-${N}${process.env.TAG ? '-' + process.env.TAG : ''}.json`);
  const save = () => fs.writeFileSync(outFile, JSON.stringify(all, null, 2));
  for (const e of engines) {
    console.error(`\n=== ${e} (N=${N}) ===`);
    const o = await runNode(['--child', e], { timeoutS: CHILD_TIMEOUT_S });
    const last = o.results[o.results.length - 1] ?? { engine: e };
    const status = o.timedOut ? `TIMEOUT>${CHILD_TIMEOUT_S}s` : o.rssCapped ? `KILLED rss>${CHILD_RSS_CAP_MB}MB` : o.code === 0 && !last.partial ? 'ok' : `FAILED code=${o.code} sig=${o.signal}`;
    const row: EngineRow = { ...last, engine: e, status, peak_rss_mb: o.peakRssMb, wall_s: o.wallS };
    if (status !== 'ok') row.stderr_tail = o.stderr.split('\n').slice(-15).join('\n');
    all.engines.push(row); save();
    if (e.startsWith('sqlite') && status === 'ok') {
      const c = await runNode(['--cold', e.replace('sqlite-', '')], { timeoutS: 120 });
      all.cold.push({ engine: e, ...(c.results[0] ?? { error: c.stderr.slice(-500) }) }); save();
    }
  }
  if (process.env.CRASH !== '0') {
    const rng = random(hash32(1234));
    for (const mode of (process.env.CRASH_MODES ?? 'TRUNCATE,WAL-EXCL').split(',')) {
      for (let k = 0; k < Number(process.env.CRASH_RUNS ?? 5); k++) {
        for (const f2 of fs.readdirSync(DATA)) if (f2.startsWith('crash')) fs.rmSync(path.join(DATA, f2), { recursive: true, force: true });
        const delay = 1500 + Math.floor(rng() * 3000);
        let lastCommitted = 0; let start = '';
        const wo = await runNode(['--crash-writer'], {
          timeoutS: 60, env: { CRASH_MODE: mode },
          onLine: (l, cp) => {
            if (l.startsWith('START')) { start = l; setTimeout(() => cp.kill('SIGKILL'), delay); }
            if (l.startsWith('COMMITTED')) lastCommitted = Number(l.split(' ')[1]);
          },
        });
        // copy the crashed files and let the native sqlite3 CLI (a correct unix VFS) recover the copy, for comparison
        let native: string | null = null;
        const cli = spawnSync('sh', ['-c', 'command -v sqlite3'], { encoding: 'utf8' }).stdout.trim();
        if (cli) {
          for (const sfx of ['', '-journal', '-wal']) if (fs.existsSync(CRASH_DB + sfx)) fs.copyFileSync(CRASH_DB + sfx, path.join(DATA, 'crash-native.db' + sfx));
          const r = spawnSync(cli, [path.join(DATA, 'crash-native.db'), "PRAGMA integrity_check; SELECT count(*) FROM docs; INSERT INTO docs(docs) VALUES('integrity-check'); SELECT 'fts-ok';"], { encoding: 'utf8' });
          native = (r.stdout + r.stderr).trim().split('\n').slice(0, 4).join(' | ');
        }
        const ck = await runNode(['--crash-check'], { timeoutS: 120, env: { CRASH_MODE: mode } });
        const r = ck.results[0] ?? { error: ck.stderr.slice(-500) };
        if (typeof r.integrity_check === 'string' && r.integrity_check.length > 300) r.integrity_check = r.integrity_check.slice(0, 300) + '…';
        const consistent = r.integrity_check === 'ok' && r.fts5_integrity === 'ok' && r.rows === r.max_rowid && (r.rows as number) % CRASH_TXN === 0 && (r.rows === lastCommitted || r.rows === lastCommitted + CRASH_TXN);
        const row: CrashRow = { mode, run: k + 1, start, kill_after_ms: delay, writer_signal: wo.signal, last_committed_seen: lastCommitted, native_sqlite3_cli_on_copy: native, ...r, consistent };
        all.crash.push(row); save();
        console.error(`crash ${mode} run ${k + 1}: ${JSON.stringify(row)}`);
      }
    }
  }
  save();
  console.log(`\nN=${N}  versions: ${JSON.stringify(all.versions)}\n`);
  console.log(table(all.engines));
  console.log('\nlatencies in ms; build rate includes synthetic doc generation (gen_ms_per_doc_included in JSON)');
  for (const r of all.engines) {
    console.log(`\n${r.engine}: notes=${JSON.stringify(r.notes ?? [])}`);
    console.log(`  hits/query avg: AND ${f(r.and_avg_hits)} phrase ${f(r.phrase_avg_hits)} prefix ${f(r.prefix_avg_hits)}; n: AND ${r.and_n} phrase ${r.phrase_n ?? '-'} prefix ${r.prefix_n ?? '-'} update ${r.update_n ?? '-'}; update p95 ${f(r.update_p95, 2)}; AND p95 ${f(r.and_p95, 2)}; rss Δ after updates ${f(r.rss_after_updates_delta_mb, 0)} MB; external Δ ${f(r.external_delta_mb, 0)} MB; gen ms/doc ${f(r.gen_ms_per_doc_included, 3)}; wall ${f(r.wall_s)}s`);
    if (r.extras) console.log('  extras: ' + JSON.stringify(r.extras));
    if (r.stderr_tail) console.log('  stderr tail:\n' + r.stderr_tail);
  }
  for (const c of all.cold) console.log(`\ncold open ${c.engine}: ${JSON.stringify(c)}`);
  for (const c of all.crash) console.log(`crash ${c.mode} #${c.run}: consistent=${c.consistent} rows=${c.rows} lastCommitted=${c.last_committed_seen} stale_lock=${c.stale_lock_dir} before_lock_removal=${c.before_lock_removal} integrity=${c.integrity_check} fts=${c.fts5_integrity} journal=${c['file-journal'] ?? '-'} wal=${c['file-wal'] ?? '-'} native_cli_on_copy=[${c.native_sqlite3_cli_on_copy}]`);
  const byMode: Record<string, string> = {}; for (const c of all.crash) byMode[c.mode] = (byMode[c.mode] ?? '') + (c.consistent ? '✓' : '✗');
  if (all.crash.length) console.log('crash summary: ' + JSON.stringify(byMode));
  console.log(`\nfull results: ${outFile}`);
}

const argv = process.argv.slice(2);
(async () => {
  if (argv[0] === '--child') await runChild(argv[1]!);
  else if (argv[0] === '--cold') await runCold(argv[1]!);
  else if (argv[0] === '--crash-writer') await runCrashWriter();
  else if (argv[0] === '--crash-check') await runCrashCheck();
  else await parent();
})().catch((e) => { console.error(e); process.exit(1); });
