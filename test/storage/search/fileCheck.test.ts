import { open, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { expect } from 'chai';
import { silentLogger } from '../../../src/common/log.js';
import { checkSearchFile } from '../../../src/storage/search/fileCheck.js';
import { PageCaches } from '../../../src/storage/search/pageCaches.js';
import { SearchDb } from '../../../src/storage/search/searchDb.js';
import { checkFile } from '../../../src/storage/search/searchFile.js';
import { random } from '../../support/random.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * An index file not closed cleanly (a crash) gets SQLite's quick_check at its next open. In place it held the
 * event loop while it read the file (5.2 s of /healthz unanswered at 50,000 items); it now runs in a worker.
 */
describe('storage/search: the check of a file not closed cleanly', function () {
  this.timeout(60_000);
  let dir: string;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ dir, cleanup } = await tmpDir('ks-filecheck'));
  });
  after(() => cleanup());

  /** An index file of `items` items of ~5 KB of words that few items share (pages enough for a check to take time). */
  const indexFile = (name: string, items: number): string => {
    const file = join(dir, name);
    const db = SearchDb.open(file, silentLogger, new PageCaches(1024 * 1024));
    const rnd = random(items);
    db.transaction(() => {
      for (let i = 0; i < items; i++) {
        db.put({ path: `n/${i}.md`, blob: `b${i}`, need: 0, text: Array.from({ length: 700 }, () => `w${Math.floor(rnd() * 50_000).toString(36)}`).join(' ') });
      }
    });
    db.close();
    return file;
  };

  it('runs in a worker thread: the event loop turns while it reads the file', async () => {
    const file = indexFile('large.sqlite', 2_500);
    let started = performance.now();
    expect(checkFile(file)).to.equal(true);
    const inPlace = performance.now() - started;
    // Too small a file would prove nothing: the check in place must hold the loop for a while.
    expect(inPlace, 'the check in place, ms').to.be.above(150);
    let longest = 0;
    let last = performance.now();
    const timer = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 5);
    started = performance.now();
    try {
      expect(await checkSearchFile(file)).to.equal(true);
    } finally {
      clearInterval(timer);
    }
    const inWorker = performance.now() - started;
    expect(longest, `longest turn ${longest.toFixed(1)} ms while the worker checked (${inWorker.toFixed(0)} ms); in place ${inPlace.toFixed(0)} ms`).to.be.below(inPlace / 3);
  });

  it('says a damaged file is not sound, nor a file that is not a database, and leaves no lock behind', async () => {
    const file = indexFile('damaged.sqlite', 300);
    const { size } = await stat(file);
    const handle = await open(file, 'r+');
    await handle.write(Buffer.alloc(8192, 0xa5), 0, 8192, Math.floor(size / 2 / 4096) * 4096);
    await handle.close();
    expect(await checkSearchFile(file)).to.equal(false);
    const notDb = join(dir, 'text.sqlite');
    await writeFile(notDb, 'not a database '.repeat(500));
    expect(await checkSearchFile(notDb)).to.equal(false);
    const sound = indexFile('sound.sqlite', 50);
    expect(await checkSearchFile(sound)).to.equal(true);
    // The worker closed its connection before answering: the file opens at once, its rows all there.
    const db = SearchDb.open(sound, silentLogger);
    try {
      expect(db.indexed().size).to.equal(50);
    } finally {
      db.close();
    }
  });
});
