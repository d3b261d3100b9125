/**
 * What a compaction of the in-memory ranking index (RankIndex.compactStep) holds the event loop for: the search
 * bench's corpus in process, all of it written again in one transaction (dead postings up to the threshold), then
 * the compaction its commit starts, run in one piece (RankIndex's default runner) and in slices as SearchIndex runs
 * it (rankBuild.ts `inSlices`), each on an index of its own. Prints the longest time the event loop was held (the
 * commit in one piece, or the longest slice), the wall time to the end, and the index's bytes before and after.
 *
 *   npm run build && node dist/test/bench/compactPause.js [--items 50000] [--bytes 2048]
 *
 * Run it built (see rankCost.ts).
 */
import { performance } from 'node:perf_hooks';
import { inSlices } from '../../src/storage/search/rankBuild.js';
import { RankIndex, type SliceRunner } from '../../src/storage/search/rankIndex.js';
import { ReadGate } from '../../src/storage/search/readGate.js';
import { docContent } from './corpus.js';
import { itemPath } from './fixtures.js';
import { scriptOptions } from './settings.js';

const options = scriptOptions();
const ITEMS = options.number('--items', 50_000);
const BYTES = options.number('--bytes', 2048);

const texts = Array.from({ length: ITEMS }, (_, i) => docContent(i, BYTES));

/** An index of the corpus with every item written again in one transaction; `runner` runs the compaction that starts. */
function filled(runner: SliceRunner | undefined): RankIndex {
  const index = new RankIndex({ slices: runner });
  for (let i = 0; i < ITEMS; i++) index.put({ path: itemPath(i), text: texts[i] as string, need: 0, rowid: i + 1 });
  index.begin();
  // Every item again, with another item's text: their old postings die, as many as the live ones (the threshold).
  for (let i = 0; i < ITEMS; i++) index.put({ path: itemPath(i), text: texts[(i + 1) % ITEMS] as string, need: 0, rowid: ITEMS + i + 1 });
  return index;
}

const mib = (bytes: number): string => (bytes / 2 ** 20).toFixed(1);

async function measure(label: string, sliced: boolean): Promise<void> {
  let done: Promise<boolean> = Promise.resolve(true);
  let slices = 0;
  let longest = 0;
  const runner: SliceRunner | undefined = sliced
    ? (step, what) => {
        if (what !== 'compaction') return void step(() => false);
        done = inSlices({ gate: new ReadGate(), stopped: () => false }, (until) => {
          const started = performance.now();
          const finished = step(until);
          slices++;
          longest = Math.max(longest, performance.now() - started);
          return finished;
        });
      }
    : undefined;
  const index = filled(runner);
  const before = index.bytes;
  const started = performance.now();
  index.commit();
  if (!sliced) longest = performance.now() - started;
  await done;
  const wall = performance.now() - started;
  if (index.compacting) throw new Error(`${label}: the compaction did not end`);
  console.log(`${label}: event loop held at most ${longest.toFixed(1)} ms at a time${sliced ? ` (${slices} slices)` : ''}; done after ${wall.toFixed(0)} ms; index ${mib(before)} → ${mib(index.bytes)} MiB of typed arrays`);
}

console.log(`${ITEMS} items of ~${BYTES} bytes, every one written again in one transaction`);
for (let round = 1; round <= 2; round++) {
  await measure(`round ${round}, in one piece`, false);
  await measure(`round ${round}, in slices  `, true);
}
