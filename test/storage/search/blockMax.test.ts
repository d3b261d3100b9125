import { expect } from 'chai';
import { RankIndex } from '../../../src/storage/search/rankIndex.js';
import { rankPlain, type PlainQuery } from '../../../src/storage/search/rankQuery.js';
import { random } from '../../support/random.js';

/**
 * Block-max in the ranking index (rankQuery.ts): a top-k over long lists skips the blocks that cannot reach it,
 * and still answers what scoring every match answers (the differential test, rankEngine.test.ts, holds it to
 * FTS5; this one holds it to the same query without a top-k to stop early, and counts what it scored).
 */
describe('storage/search: block-max skips what cannot reach the top', () => {
  const rnd = random(4242);
  const index = new RankIndex();
  const words = ['common', 'other', 'filler', 'word', 'text'];
  for (let i = 0; i < 3000; i++) {
    // Every item holds "common" and "other", a few times each, among filler of varying length.
    const tokens = [
      ...Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => 'common'),
      ...Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => 'other'),
      ...Array.from({ length: 20 + Math.floor(rnd() * 200) }, () => words[2 + Math.floor(rnd() * 3)] as string),
    ];
    index.put({ path: `notes/${String(i).padStart(5, '0')}.md`, text: tokens.join(' '), need: 0, rowid: i + 1 });
  }
  // One item with "common" in its path too: path matches rank first, whatever their blocks' scores.
  index.put({ path: 'common/zz.md', text: 'other filler', need: 0, rowid: 5000 });
  const all = (q: Omit<PlainQuery, 'limit' | 'offset'>) => rankPlain(index, { ...q, limit: 10_000, offset: 0 });

  for (const include of [['common'], ['common', 'other'], ['other', 'common', 'other']]) {
    it(`scores a fraction of the matches of ${include.join(' ')} for a page of 10, with the same page`, () => {
      const q = { include, exclude: [], needs: [0] };
      const stats = { scored: 0 };
      const page = rankPlain(index, { ...q, limit: 10, offset: 0 }, stats);
      const everything = all(q);
      expect(page).to.deep.equal(everything.slice(0, 10));
      expect(page[0]?.path).to.equal('common/zz.md');
      expect(everything.length).to.be.at.least(3000);
      // Without block-max every match is scored (3,001).
      expect(stats.scored).to.be.below(everything.length / 3);
    });
  }

  it('pages deep and with exclusions alike', () => {
    index.put({ path: 'notes/excluded.md', text: 'common common common common other nope', need: 0, rowid: 6000 });
    for (const [offset, limit] of [[0, 1], [5, 20], [100, 50]] as const) {
      const q = { include: ['common', 'other'], exclude: ['nope'], needs: [0] };
      expect(rankPlain(index, { ...q, limit, offset })).to.deep.equal(all(q).slice(offset, offset + limit));
    }
  });
});
