import { join } from 'node:path';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import { buildRankIndex, inSlices } from '../../../src/storage/search/rankBuild.js';
import { RankIndex } from '../../../src/storage/search/rankIndex.js';
import { ReadGate } from '../../../src/storage/search/readGate.js';
import { SearchDb } from '../../../src/storage/search/searchDb.js';
import { random } from '../../support/random.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * The ranking index's load makes every long list's top documents before it says it is ready, so that no first
 * query of a common word after a start pays for its list's (up to 15 ms at 50,000 items).
 */
describe('storage/search: the ranking index load', () => {
  it('makes the top documents of every long list before it is ready, none left for a first query', async () => {
    const { dir, cleanup } = await tmpDir();
    const db = SearchDb.open(join(dir, 'search.sqlite'), silentLogger);
    try {
      const rnd = random(5);
      const words = ['alpha', 'beta', 'gamma', 'delta', 'rare1', 'rare2', 'rare3'];
      // Zipf-like: the first words are in most items, the last in few.
      const text = (): string => Array.from({ length: 20 }, () => words[Math.floor(rnd() ** 3 * words.length)]).join(' ');
      db.transaction(() => {
        for (let i = 0; i < 400; i++) db.put({ path: `n/${i}.md`, blob: `b${i}`, need: 0, text: text() });
      });
      const rank = new RankIndex({ topFrom: 40, topSize: 8 });
      expect(await buildRankIndex({ db, rank, gate: new ReadGate(), stopped: () => false, logger: silentLogger, orgId: 'o', progressEvery: 1000 })).to.equal(true);
      const long = rank.longTerms();
      expect(long).to.include.members(['alpha', 'beta']);
      const loaded = rank.bytes;
      for (const term of long) rank.topDocs(term, rank.liveTokens / rank.liveDocs);
      expect(rank.bytes, 'a first query built top documents the load had not').to.equal(loaded);
    } finally {
      db.close();
      await cleanup();
    }
  });

  it('works in slices: none in its caller\'s turn, none while a staged transaction is open, none once stopped', async () => {
    const gate = new ReadGate();
    const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
    let calls = 0;
    let stop = false;
    // Each call does one unit and stops (as `until` says at once); done after 5.
    const work = inSlices({ gate, stopped: () => stop }, (until) => {
      calls++;
      expect(until()).to.be.a('boolean');
      return calls === 5;
    });
    expect(calls, 'in the caller\'s turn').to.equal(0);
    gate.close();
    for (let i = 0; i < 5; i++) await turn();
    expect(calls, 'while the gate is closed').to.equal(0);
    gate.open();
    expect(await work).to.equal(true);
    expect(calls).to.equal(5);
    // Stopped before its first slice: nothing done, false.
    calls = 0;
    const stopped = inSlices({ gate, stopped: () => stop }, () => {
      calls++;
      return false;
    });
    stop = true;
    expect(await stopped).to.equal(false);
    expect(calls).to.equal(0);
  });
});
