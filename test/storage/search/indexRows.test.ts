import { join } from 'node:path';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import type { IndexEntry } from '../../../src/storage/repo/itemIndex.js';
import { catchUpRows } from '../../../src/storage/search/catchUp.js';
import { IndexRows, type SearchSource } from '../../../src/storage/search/indexRows.js';
import { RankIndex } from '../../../src/storage/search/rankIndex.js';
import { SearchDb } from '../../../src/storage/search/searchDb.js';
import { random } from '../../support/random.js';
import { textRecord } from '../../support/records.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * A batch's rows go to FTS5 in the order of their rowids, whatever the order of its paths: FTS5 flushes its
 * pending postings as a segment of their own whenever a write goes to a lower rowid than the last, which made a
 * batch of 16 PUTs write up to 16 segments (IndexRows.apply). The file's writes are watched as SearchDb sees them.
 */
describe('storage/search: a batch and a catch-up write their rows in rowid order', () => {
  it('rewrites, removals and read-rank changes by rising rowid, new rows last in their order, and the rows end up right', async () => {
    const { dir, cleanup } = await tmpDir();
    const db = SearchDb.open(join(dir, 'search.sqlite'), silentLogger);
    try {
      const entries = new Map<string, IndexEntry>();
      const source: SearchSource = {
        headCommit: null,
        // The repository lists its items in path order, which is not the order their rows were made in: here,
        // the reverse of it.
        entries: () => [...entries.values()].reverse(),
        get: (path) => entries.get(path),
        folderRule: () => undefined,
        readContent: async () => '',
      };
      const rows = new IndexRows(db, source, (record) => (record.requiredReadPermission === 'inherit' ? 0 : 1), new RankIndex());
      let serial = 0;
      const entry = (path: string): IndexEntry => {
        const e = { record: textRecord(path), blobOid: `b${serial++}`, recordOid: `r${serial}` };
        entries.set(path, e);
        return e;
      };
      const paths = Array.from({ length: 40 }, (_, i) => `n/${String(i).padStart(2, '0')}.md`);
      db.transaction(() => rows.apply(paths.map((path) => ({ path, entry: entry(path), text: `first ${path}` })), 'h1', source));
      const idOf = new Map(paths.map((path) => [path, (rows.get(path) as { id: number }).id]));

      // Watched from here: the order in which the rows' ids reach the file.
      const order: Array<number | string> = [];
      const put = db.put.bind(db);
      db.put = (args) => {
        order.push(args.id ?? `new ${args.path}`);
        return put(args);
      };
      const remove = db.remove.bind(db);
      db.remove = (id) => {
        order.push(id);
        remove(id);
      };
      const setNeed = db.setNeed.bind(db);
      db.setNeed = (id, need) => {
        order.push(id);
        setNeed(id, need);
      };

      const rnd = random(11);
      const shuffled = [...paths].sort(() => rnd() - 0.5);
      const rewritten = shuffled.slice(0, 12);
      const removed = shuffled.slice(12, 16);
      const reranked = shuffled.slice(16, 20);
      const updates = [
        { path: 'n/new-b.md', entry: entry('n/new-b.md'), text: 'new b' },
        ...rewritten.map((path) => ({ path, entry: entry(path), text: `second ${path}` })),
        ...removed.map((path) => {
          entries.delete(path);
          return { path, entry: undefined };
        }),
        { path: 'n/new-a.md', entry: entry('n/new-a.md'), text: 'new a' },
        ...reranked.map((path) => {
          // The read permission alone: the same content.
          const e = { ...(entries.get(path) as IndexEntry), record: textRecord(path, { requiredReadPermission: 'knowledge:write' }) };
          entries.set(path, e);
          return { path, entry: e };
        }),
      ].sort(() => rnd() - 0.5);
      db.transaction(() => rows.apply(updates, 'h2', source));

      const known = [...rewritten, ...removed, ...reranked].map((path) => idOf.get(path) as number).sort((a, b) => a - b);
      const news = updates.filter((u) => u.path.startsWith('n/new-')).map((u) => `new ${u.path}`);
      expect(order).to.deep.equal([...known, ...news]);
      // The rows are what the updates say, whatever their order.
      for (const path of rewritten) expect(db.body((rows.get(path) as { id: number }).id)).to.equal(`second ${path}`);
      for (const path of removed) expect(rows.get(path)).to.equal(undefined);
      for (const path of reranked) expect(rows.get(path)?.need).to.equal(1);
      expect(db.body((rows.get('n/new-a.md') as { id: number }).id)).to.equal('new a');
      expect(db.head).to.equal('h2');

      // A catch-up (at open, after a crash) writes what differs in the same order: items changed behind the
      // index's back, in the random order of their paths, and new ones.
      order.length = 0;
      const changed = [...rewritten, ...reranked.slice(0, 2)].sort(() => rnd() - 0.5);
      for (const path of changed) entry(path);
      entry('n/new-c.md');
      const caught = await catchUpRows({ rows, source, textOf: async (e) => `third ${e.record.path}`, logger: silentLogger, orgId: 'o', progressEvery: 1000 });
      expect(caught.written).to.equal(changed.length + 1);
      const changedIds = changed.map((path) => (rows.get(path) as { id: number }).id).sort((a, b) => a - b);
      expect(order).to.deep.equal([...changedIds, 'new n/new-c.md']);
      for (const path of changed) expect(db.body((rows.get(path) as { id: number }).id)).to.equal(`third ${path}`);
    } finally {
      db.close();
      await cleanup();
    }
  });
});

describe('storage/search: a catch-up reads the rows in pages, batches writing between them', () => {
  it('drops, rewrites and re-ranks what changed behind its back, and leaves alone what a batch wrote meanwhile', async () => {
    const { dir, cleanup } = await tmpDir();
    const db = SearchDb.open(join(dir, 'search.sqlite'), silentLogger);
    try {
      const entries = new Map<string, IndexEntry>();
      const source: SearchSource & { headCommit: string | null } = {
        headCommit: 'h1',
        entries: () => entries.values(),
        get: (path) => entries.get(path),
        folderRule: () => undefined,
        readContent: async () => '',
      };
      const rows = new IndexRows(db, source, (record) => (record.requiredReadPermission === 'inherit' ? 0 : 1), new RankIndex());
      let serial = 0;
      const entry = (path: string, extra: Parameters<typeof textRecord>[1] = {}): IndexEntry => {
        const e = { record: textRecord(path, extra), blobOid: `b${serial++}`, recordOid: `r${serial}` };
        entries.set(path, e);
        return e;
      };
      const paths = Array.from({ length: 30 }, (_, i) => `n/${String(i).padStart(2, '0')}.md`);
      db.transaction(() => rows.apply(paths.map((path) => ({ path, entry: entry(path), text: `first ${path}` })), 'h1', source));

      // Behind the index's back (a crash): one item deleted, one rewritten, one given another read permission.
      entries.delete('n/03.md');
      entry('n/04.md');
      entries.set('n/05.md', { ...(entries.get('n/05.md') as IndexEntry), record: textRecord('n/05.md', { requiredReadPermission: 'knowledge:write' }) });

      // A batch published after the first page: an item made (its row has the highest id, so it is read in the last
      // page, though it was not live when the pass began) and one deleted that was live then.
      let pages = 0;
      let batchRan = false;
      const page = db.indexedPage.bind(db);
      db.indexedPage = (after, limit, out) => {
        const last = page(after, limit, out);
        if (++pages === 1) {
          setImmediate(() => {
            entry('n/made-meanwhile.md');
            entries.delete('n/20.md');
            source.headCommit = 'h2';
            db.transaction(() =>
              rows.apply(
                [
                  { path: 'n/made-meanwhile.md', entry: entries.get('n/made-meanwhile.md'), text: 'made meanwhile' },
                  { path: 'n/20.md', entry: undefined },
                ],
                'h2',
                source,
              ),
            );
            batchRan = true;
          });
        }
        return last;
      };
      const caught = await catchUpRows({ rows, source, textOf: async (e) => `caught ${e.record.path}`, logger: silentLogger, orgId: 'o', progressEvery: 1000, pageSize: 4 });
      expect(batchRan, 'the batch ran between two pages').to.equal(true);
      expect(pages, 'pages of 4 rows').to.be.at.least(8);
      expect(db.body((rows.get('n/made-meanwhile.md') as { id: number }).id), 'the batch\'s row kept').to.equal('made meanwhile');
      expect(rows.get('n/03.md'), 'deleted behind its back: dropped').to.equal(undefined);
      expect(rows.get('n/20.md'), 'deleted by the batch: gone').to.equal(undefined);
      expect(db.body((rows.get('n/04.md') as { id: number }).id)).to.equal('caught n/04.md');
      expect(rows.get('n/05.md')?.need, 'its new read rank').to.equal(1);
      expect(caught).to.deep.equal({ written: 1, removed: 1, needs: 1 });
      expect(rows.differences(), 'the rows agree with the items').to.deep.equal([]);
      expect(db.head).to.equal('h2');
    } finally {
      db.close();
      await cleanup();
    }
  });
});
