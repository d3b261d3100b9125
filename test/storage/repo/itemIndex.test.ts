import { expect } from 'chai';
import { IndexOverlay, ItemIndex, versionTag, type IndexEntry } from '../../../src/storage/repo/itemIndex.js';
import type { ItemRecord } from '../../../src/storage/repo/itemRecord.js';
import { textRecord } from '../../support/records.js';

/** The in-memory index (reads come from memory, not git): sorted listing, paging, folder counts, a batch's overlay. */

let counter = 0;
function entry(path: string, extra: Partial<ItemRecord> = {}): IndexEntry {
  counter++;
  const record = textRecord(path, { id: `id-${counter}`, when: new Date('2024-01-01T00:00:00.000Z'), createdBy: 'key_1', updatedBy: 'key_1', ...extra });
  const hex = counter.toString(16).padStart(40, '0');
  return { record, blobOid: `b${hex.slice(1)}`, recordOid: `c${hex.slice(1)}` };
}

const paths = (it: Iterable<IndexEntry>): string[] => [...it].map((e) => e.record.path);

describe('storage/itemIndex', () => {
  describe('ItemIndex iteration', () => {
    // Inserted out of order; "-" (0x2d) < "." (0x2e) < "/" (0x2f) < "0" (0x30) < "_" (0x5f) < "a" bytewise.
    const ALL = ['b.md', 'a/x.md', 'a.md', 'a0.md', 'a-b.md', 'a/b/c.md', 'a_z.md', 'ab/x.md', 'a/y.md', 'z.md'];
    const SORTED = ['a-b.md', 'a.md', 'a/b/c.md', 'a/x.md', 'a/y.md', 'a0.md', 'a_z.md', 'ab/x.md', 'b.md', 'z.md'];
    let index: ItemIndex;

    beforeEach(() => {
      index = new ItemIndex();
      for (const p of ALL) index.set(p, entry(p));
    });

    it('iterates every entry in bytewise path order whatever the insertion order', () => {
      expect(index.size).to.equal(ALL.length);
      expect(paths(index.iterate())).to.deep.equal(SORTED);
      expect([...SORTED].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)))).to.deep.equal(SORTED);
    });

    it('limits to a folder prefix, excluding look-alike siblings', () => {
      expect(paths(index.iterate({ prefix: 'a/' }))).to.deep.equal(['a/b/c.md', 'a/x.md', 'a/y.md']);
      expect(paths(index.iterate({ prefix: 'a/b/' }))).to.deep.equal(['a/b/c.md']);
      expect(paths(index.iterate({ prefix: 'ab/' }))).to.deep.equal(['ab/x.md']);
      expect(paths(index.iterate({ prefix: 'nothing/' }))).to.deep.equal([]);
      expect(paths(index.iterate({ prefix: 'zz/' }))).to.deep.equal([]);
    });

    it('starts strictly after `after`', () => {
      expect(paths(index.iterate({ after: 'a/x.md' }))).to.deep.equal(['a/y.md', 'a0.md', 'a_z.md', 'ab/x.md', 'b.md', 'z.md']);
      expect(paths(index.iterate({ after: 'a-b.md' }))).to.deep.equal(SORTED.slice(1));
      expect(paths(index.iterate({ after: 'z.md' }))).to.deep.equal([]);
    });

    it('starts after a cursor path that is no longer in the index', () => {
      expect(paths(index.iterate({ after: 'a/w.md' }))).to.deep.equal(['a/x.md', 'a/y.md', 'a0.md', 'a_z.md', 'ab/x.md', 'b.md', 'z.md']);
      expect(paths(index.iterate({ after: 'zz.md' }))).to.deep.equal([]);
    });

    it('combines prefix and after', () => {
      expect(paths(index.iterate({ prefix: 'a/', after: 'a/b/c.md' }))).to.deep.equal(['a/x.md', 'a/y.md']);
      expect(paths(index.iterate({ prefix: 'a/', after: 'a/y.md' }))).to.deep.equal([]);
      // A cursor before the prefix starts at the prefix; one past it yields nothing.
      expect(paths(index.iterate({ prefix: 'a/', after: 'a-b.md' }))).to.deep.equal(['a/b/c.md', 'a/x.md', 'a/y.md']);
      expect(paths(index.iterate({ prefix: 'a/', after: 'b.md' }))).to.deep.equal([]);
    });

    it('pages through everything exactly once', () => {
      const seen: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = paths(index.iterate({ after })).slice(0, 3);
        if (page.length === 0) break;
        seen.push(...page);
        after = page[page.length - 1];
      }
      expect(seen).to.deep.equal(SORTED);
    });

    it('keeps order through removals and re-insertions, and replacing does not duplicate', () => {
      index.set('a.md', null);
      index.set('ab/x.md', null);
      index.set('a/x.md', entry('a/x.md'));
      index.set('0.md', entry('0.md'));
      expect(paths(index.iterate())).to.deep.equal(['0.md', 'a-b.md', 'a/b/c.md', 'a/x.md', 'a/y.md', 'a0.md', 'a_z.md', 'b.md', 'z.md']);
      expect(index.size).to.equal(9);
      index.set('never-there.md', null);
      expect(index.size).to.equal(9);
    });

    it('returns the latest entry for a path', () => {
      const newer = entry('a.md');
      index.set('a.md', newer);
      expect(index.get('a.md')).to.equal(newer);
      expect(index.get('missing.md')).to.equal(undefined);
    });
  });

  describe('ItemIndex folder counts', () => {
    it('counts items at any depth under each ancestor', () => {
      const index = new ItemIndex();
      index.set('a/b/c.md', entry('a/b/c.md'));
      index.set('a/d.md', entry('a/d.md'));
      index.set('top.md', entry('top.md'));
      expect(index.folderCount('a')).to.equal(2);
      expect(index.folderCount('a/b')).to.equal(1);
      expect(index.folderCount('a/b/c.md')).to.equal(0);
      expect(index.folderCount('top.md')).to.equal(0);
      expect(index.folderCount('')).to.equal(0);
      expect(index.hasEntriesUnder('a')).to.equal(true);
      expect(index.hasEntriesUnder('a/b')).to.equal(true);
      expect(index.hasEntriesUnder('b')).to.equal(false);
    });

    it('does not count a folder whose name only starts the same', () => {
      const index = new ItemIndex();
      index.set('ab/c.md', entry('ab/c.md'));
      index.set('a.md', entry('a.md'));
      expect(index.folderCount('a')).to.equal(0);
      expect(index.folderCount('ab')).to.equal(1);
    });

    it('does not count a replaced entry twice, and forgets a folder once it empties', () => {
      const index = new ItemIndex();
      index.set('a/b/c.md', entry('a/b/c.md'));
      index.set('a/b/c.md', entry('a/b/c.md'));
      expect(index.folderCount('a/b')).to.equal(1);
      index.set('a/b/c.md', null);
      expect(index.folderCount('a')).to.equal(0);
      expect(index.folderCount('a/b')).to.equal(0);
      expect(index.hasEntriesUnder('a')).to.equal(false);
      index.set('a/b/c.md', null);
      expect(index.folderCount('a')).to.equal(0);
    });

    it('counts trashed entries too (they hold the path)', () => {
      const index = new ItemIndex();
      index.set('a/x.md', entry('a/x.md', { deletedAt: '2024-01-02T00:00:00.000Z', deletedBy: 'key_1' }));
      expect(index.hasEntriesUnder('a')).to.equal(true);
    });
  });

  describe('IndexOverlay', () => {
    let base: ItemIndex;
    let overlay: IndexOverlay;

    beforeEach(() => {
      base = new ItemIndex();
      base.set('a/x.md', entry('a/x.md'));
      base.set('keep.md', entry('keep.md'));
      overlay = new IndexOverlay(base);
    });

    it('reads through to the base until a path is staged', () => {
      expect(overlay.get('a/x.md')).to.equal(base.get('a/x.md'));
      const staged = entry('a/x.md');
      overlay.set('a/x.md', staged);
      expect(overlay.get('a/x.md')).to.equal(staged);
      expect(base.get('a/x.md')).not.to.equal(staged);
    });

    it('hides a path deleted in the batch', () => {
      overlay.set('keep.md', null);
      expect(overlay.get('keep.md')).to.equal(undefined);
      expect(base.get('keep.md')).not.to.equal(undefined);
    });

    it('counts a folder as empty after its last item is deleted in the batch (delete-then-count)', () => {
      expect(overlay.hasEntriesUnder('a')).to.equal(true);
      overlay.set('a/x.md', null);
      expect(overlay.hasEntriesUnder('a')).to.equal(false);
      expect(base.hasEntriesUnder('a')).to.equal(true);
    });

    it('counts a folder created in the batch', () => {
      expect(overlay.hasEntriesUnder('n/m')).to.equal(false);
      overlay.set('n/m/o.md', entry('n/m/o.md'));
      expect(overlay.hasEntriesUnder('n')).to.equal(true);
      expect(overlay.hasEntriesUnder('n/m')).to.equal(true);
      expect(base.hasEntriesUnder('n')).to.equal(false);
    });

    it('delete, then re-add, then update the same path: the folder holds one item', () => {
      overlay.set('a/x.md', null);
      overlay.set('a/x.md', entry('a/x.md'));
      overlay.set('a/x.md', entry('a/x.md'));
      expect(overlay.hasEntriesUnder('a')).to.equal(true);
      overlay.set('a/x.md', null);
      expect(overlay.hasEntriesUnder('a')).to.equal(false);
      overlay.set('a/x.md', null);
      overlay.set('a/y.md', entry('a/y.md'));
      expect(overlay.hasEntriesUnder('a')).to.equal(true);
      overlay.set('a/y.md', null);
      expect(overlay.hasEntriesUnder('a')).to.equal(false);
    });

    it('changes the base only on applyTo, with the final staged state', () => {
      const replaced = entry('a/x.md');
      overlay.set('keep.md', null);
      overlay.set('a/x.md', replaced);
      overlay.set('b/new.md', entry('b/new.md'));
      expect(paths(base.iterate())).to.deep.equal(['a/x.md', 'keep.md']);
      overlay.applyTo(base);
      expect(paths(base.iterate())).to.deep.equal(['a/x.md', 'b/new.md']);
      expect(base.get('a/x.md')).to.equal(replaced);
      expect(base.folderCount('b')).to.equal(1);
      expect(base.folderCount('a')).to.equal(1);
    });
  });

  describe('versionTag', () => {
    it('changes when the content or the record changes', () => {
      const e = entry('a.md');
      const tag = versionTag(e);
      expect(versionTag({ ...e })).to.equal(tag);
      expect(versionTag({ ...e, blobOid: `f${e.blobOid.slice(1)}` })).not.to.equal(tag);
      expect(versionTag({ ...e, recordOid: `f${e.recordOid.slice(1)}` })).not.to.equal(tag);
    });
  });
});
