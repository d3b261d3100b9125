import { join } from 'node:path';
import { expect } from 'chai';
import { createLogger } from '../../../src/common/log.js';
import type { HistoryEntry } from '../../../src/storage/repo/historyEntry.js';
import type { IndexEntry } from '../../../src/storage/repo/itemIndex.js';
import type { FolderRule, ItemRecord } from '../../../src/storage/repo/itemRecord.js';
import { SearchIndex, type SearchSource } from '../../../src/storage/search/searchIndex.js';
import type { SearchTerm } from '../../../src/storage/search/matchExpression.js';
import { random } from '../../support/random.js';
import { textRecord } from '../../support/records.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * The in-memory ranking engine against FTS5 on the same index: random corpora (accents, CJK runs,
 * digits, mixed case, odd Unicode), random writes, deletes, folder rules, rolled-back batches, and
 * random queries of every class for every set of read ranks and folder prefixes. Each page must be the
 * same from both engines: paths, order, scores and snippets.
 */

const WORDS = [
  'café', 'Cafe', 'CAFÉ', 'naïve', 'naive', 'Straße', 'strasse', 'ﬁne', 'fine', 'Ωmega', 'ωmega', 'ǅemal', 'résumé', 'resume',
  '日本語', '東京', 'の', 'データ', '한국어', 'x1', '42', '٣٣', 'v2', 'alpha', 'Alpha', 'beta', 'gamma', 'delta', 'note', 'notes',
  'a\u0301b', 'e\u0308', 'İstanbul', 'istanbul', '\u{1D400}x', '\u{10400}', 'emoji\u{1F600}', 'zero\u200dwidth', 'soft\u00adhyphen',
];
const SEPARATORS = [' ', ' ', ' ', '. ', ': ', '\n', ', ', '-', '/', '  ', '.\n', '!', '\t'];
const FOLDERS = ['f0', 'f1', 'f1/deep', 'f2'];

const rules = new Set<string>();
const folderOf = (path: string): string => path.slice(0, path.lastIndexOf('/'));
/** Read rank: the record's read permission; a folder rule raises its items to 2. */
const readNeed = (record: ItemRecord, src: Pick<SearchSource, 'folderRule'>): number =>
  src.folderRule(folderOf(record.path)) ? 2 : Math.max(0, ['inherit', 'knowledge:read', 'knowledge:write', 'knowledge:admin'].indexOf(record.requiredReadPermission) - 1);

describe('storage/search: the in-memory ranking engine equals FTS5', function () {
  this.timeout(600_000);

  // Seeds 3 to 7 with ten times the items (common words' lists then span dozens of 64-byte blocks, which
  // block-max skips: rankQuery.ts), seeds 2, 4 and 6 with the lists written again without their dead documents
  // once 50 postings are dead; seeds 5 to 7 keep top documents (topDocs.ts) for lists of 40 postings and more,
  // 8 each, so that most queries take them, old ones among new documents, under every kind of change.
  // Seed 7 with ASCII words alone: every body is then snipped from its bytes (snippetTokens.ts), the others'
  // mostly from their text.
  for (const seed of [1, 2, 3, 4, 5, 6, 7]) {
    it(`same pages, scores and snippets (seed ${seed}${seed === 7 ? ', ASCII bodies' : ''})`, async () => {
      const rnd = random(seed * 7919);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
      const ascii = (w: string): boolean => [...w].every((ch) => ch.charCodeAt(0) < 0x80);
      const words = seed === 7 ? WORDS.filter(ascii) : WORDS;
      const vocabulary = [...words, ...Array.from({ length: 60 }, (_, i) => `w${(i * 37) % 101}${pick(seed === 7 ? ['', 'x', 'X'] : ['', 'x', 'é'])}`)];
      const word = (): string => (rnd() < 0.7 ? pick(vocabulary.slice(0, 12 + Math.floor(rnd() * vocabulary.length))) : pick(vocabulary));
      const text = (n: number): string => Array.from({ length: n }, () => word() + pick(SEPARATORS)).join('');
      const { dir, cleanup } = await tmpDir();
      const entries = new Map<string, IndexEntry>();
      const contents = new Map<string, string>();
      let head = 'h0';
      let serial = 0;
      const source: SearchSource = {
        get headCommit() {
          return head;
        },
        entries: () => entries.values(),
        get: (path) => entries.get(path),
        folderRule: (folder) => (rules.has(folder) ? ({} as FolderRule) : undefined),
        readContent: async (entry) => contents.get(entry.blobOid) ?? '',
      };
      const write = (path: string, body: string): IndexEntry => {
        const blobOid = `b${serial++}`;
        contents.set(blobOid, body);
        const perm = pick(['inherit', 'inherit', 'knowledge:read', 'knowledge:write', 'knowledge:admin'] as const);
        const entry = { record: textRecord(path, { requiredReadPermission: perm }), blobOid, recordOid: `r${serial}` };
        entries.set(path, entry);
        return entry;
      };
      rules.clear();
      for (let i = 0; i < (seed >= 3 ? 1500 : 150); i++) write(`${pick(FOLDERS)}/${word()}-${i}.md`, text(Math.floor(rnd() * 120)));
      // Kept, not printed: the compactions' lines are looked for at the end.
      const logged: string[] = [];
      const logger = createLogger({ level: 'info', write: (line) => logged.push((JSON.parse(line) as { msg: string }).msg) });
      const index = await SearchIndex.open({ file: join(dir, 'search.sqlite'), source, readNeed, logger, orgId: 'diff', rankTuning: { compactAt: seed % 2 === 0 ? 50 : undefined, ...(seed >= 5 ? { topFrom: 40, topSize: 8 } : {}) } });
      try {
        await index.rankLoaded();
        let phase = "initial";
        const compare = async (rounds: number): Promise<void> => {
          for (let r = 0; r < rounds; r++) {
            const include: SearchTerm[] = Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => term());
            const exclude: SearchTerm[] = Array.from({ length: rnd() < 0.3 ? 1 + Math.floor(rnd() * 2) : 0 }, () => term());
            const needs = pick([[0], [0, 1], [0, 1, 2], [1, 2], []]);
            const prefixes = rnd() < 0.2 ? [pick(FOLDERS.map((f) => `${f}/`))] : undefined;
            const limit = 1 + Math.floor(rnd() * 30);
            const offset = rnd() < 0.3 ? Math.floor(rnd() * 20) : 0;
            const ask = async (useRank: boolean) => {
              index.useRank = useRank;
              const { hits } = await index.search({ terms: { include, exclude }, needs, prefixes, limit, offset });
              return hits.map((h) => ({ path: h.entry.record.path, score: h.score, snippet: h.snippet }));
            };
            const fts = await ask(false);
            const ours = await ask(true);
            expect(ours, JSON.stringify({ phase, include, exclude, needs, prefixes, limit, offset })).to.deep.equal(fts);
          }
        };
        const term = (): SearchTerm => {
          const r = rnd();
          // Mostly plain words (the in-memory engine's), some phrases and prefixes (FTS5's in both).
          if (r < 0.8) return { text: rnd() < 0.2 ? word().toUpperCase() : word(), prefix: false };
          if (r < 0.9) return { text: `${word()} ${word()}`, prefix: false };
          return { text: word().slice(0, 2), prefix: true };
        };
        await compare(150);
        for (let step = 0; step < 12; step++) {
          // A batch of writes, deletes, a folder rule: published, or staged and rolled back.
          const commits: HistoryEntry[] = [];
          const written = new Map<string, string>();
          const paths = [...entries.keys()];
          const before = new Map(entries);
          for (let k = 0; k < 8; k++) {
            const roll = rnd();
            const path = roll < 0.3 ? `${pick(FOLDERS)}/${word()}-n${serial}.md` : pick(paths);
            const current = entries.get(path);
            if (roll > 0.85) entries.delete(path);
            else if (roll > 0.7 && current) {
              // The read permission alone: the same content, a new read rank (a row whose `need` moves).
              const perm = pick(['inherit', 'knowledge:read', 'knowledge:write', 'knowledge:admin'] as const);
              entries.set(path, { ...current, record: { ...current.record, requiredReadPermission: perm } });
            } else {
              const body = text(Math.floor(rnd() * 120));
              const e = write(path, body);
              written.set(e.blobOid, body);
            }
            commits.push({ commitId: `c${serial}`, parent: head, item: { path, id: 'x', action: 'update' }, message: 'm', author: { name: 'a', email: 'a' }, timestamp: 0 } as HistoryEntry);
          }
          const ruleChange = rnd() < 0.3;
          if (ruleChange) {
            const f = pick(FOLDERS);
            if (rules.has(f)) rules.delete(f);
            else rules.add(f);
            commits.push({ commitId: `c${serial}r`, parent: head, message: 'rule', author: { name: 'a', email: 'a' }, timestamp: 0 } as HistoryEntry);
          }
          const next = `h${step + 1}`;
          if (!ruleChange && rnd() < 0.3) {
            // Staged, then the write fails: both engines must come back to the state before.
            const after = new Map(entries);
            entries.clear();
            before.forEach((v, k) => entries.set(k, v));
            const state = { get: (p: string) => after.get(p), hasEntriesUnder: () => true, folderRule: source.folderRule };
            const staged = await index.stage({ parent: head, head: next, root: 'r', commits, written, state, diskBusy: Promise.resolve(true) } as never);
            staged?.rollback();
          } else {
            head = next;
            await index.published({ parent: head, head, root: 'r', commits, written, flushed: { objects: 1, packs: 1, names: new Map() } });
          }
          phase = `step ${step}`;
          // The index's slices (a compaction, top documents made after a query) run between turns of the event
          // loop, as a server's I/O gives them; this loop's awaits alone are microtasks and would never let them.
          for (let turn = 0; turn < 3; turn++) await new Promise((resolve) => setImmediate(resolve));
          await compare(40);
        }
        expect(index.differences()).to.deep.equal([]);
        // With compactions due every 50 dead postings, the index's own slices ran some to their end.
        if (seed % 2 === 0) expect(logged, 'compactions run to their end by SearchIndex').to.include('search ranking index compacted');
        // `verify` sees the copy too: a row it lost is named.
        const lost = [...entries.keys()].find((p) => entries.get(p)?.record.deletedAt === null) as string;
        (index as unknown as { copy: { rank: { remove(path: string): void } } }).copy.rank.remove(lost);
        expect(index.differences()).to.deep.equal([`search ranking index: ${lost} is missing`]);
      } finally {
        index.close();
        await cleanup();
      }
    });
  }
});
