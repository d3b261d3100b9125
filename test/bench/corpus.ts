/**
 * The text of the search benchmark's fixture: markdown-like items of about a
 * given size (headings, paragraphs, lists), written from a vocabulary whose
 * word frequencies follow Zipf's law, as natural language does: a few words
 * are in nearly every item, most are in a few. Each item also has a topic
 * (topics are Zipf-distributed too) whose own few dozen words it uses more
 * often, so words co-occur as they do in real notes and a two-word query of
 * related words finds a realistic number of items.
 *
 * Everything is a pure function of a seed: item i is the same text every
 * time, whatever order items are written in. The words are made of syllables
 * (short ones for frequent words, long ones for rare words), plain ASCII
 * letters, so SQLite's tokenizer and the hit counter here split them alike.
 *
 * The queries the bench sends come from the same vocabulary, in classes by
 * frequency; `HitCounter` counts, while the fixture is written, how many items
 * each query matches, so the report can say what spread of hits it measured.
 */

import { random } from '../support/random.js';

/** Words in the vocabulary, and Zipf's exponent over their ranks. */
const VOCABULARY = 50_000;
const ZIPF_S = 1.0;
const TOPICS = 200;
const TOPIC_WORDS = 40;
/** The share of an item's words drawn from its topic's words. */
const TOPIC_SHARE = 0.2;
/** Rank bands for the queries: [from, to) in the vocabulary (0 is the most frequent word). */
const BANDS = { common: [3, 60], mid: [60, 1_500], rare: [1_500, VOCABULARY] } as const;
type Band = keyof typeof BANDS;

const seedOf = (...parts: number[]): number => parts.reduce((h, p) => Math.imul(h ^ (p >>> 0), 0x01000193) >>> 0, 0x811c9dc5);

/** Cumulative weights of a Zipf law over n ranks, and a draw from it. */
function zipf(n: number, s: number): (rnd: () => number) => number {
  const cumulative = new Float64Array(n);
  let total = 0;
  for (let r = 0; r < n; r++) cumulative[r] = total += 1 / (r + 1) ** s;
  return (rnd) => {
    const x = rnd() * total;
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((cumulative[mid] as number) < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}

const ONSETS = ['b', 'c', 'd', 'f', 'g', 'h', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'w', 'z', 'br', 'cr', 'dr', 'fl', 'gr', 'pl', 'st', 'tr', 'sh', 'ch', 'th'];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'ai', 'ea', 'ou', 'io'];
const CODAS = ['', '', '', 'n', 'r', 's', 'l', 'm', 't', 'nd', 'st', 'rk', 'ng'];
/** Words the paths hold (bench/f000/item-0000.md): never in the vocabulary, so a hit is a content hit. */
const RESERVED = new Set(['bench', 'item', 'md']);

let vocabularyCache: string[] | undefined;

/** The vocabulary by rank: word 0 is the most frequent. */
export function vocabulary(): string[] {
  if (vocabularyCache) return vocabularyCache;
  const rnd = random(seedOf(1));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const words: string[] = [];
  const seen = new Set<string>();
  while (words.length < VOCABULARY) {
    const r = words.length;
    const syllables = (r < 40 ? 1 : r < 3_000 ? 2 : 3) + (r >= 3_000 && rnd() < 0.1 ? 1 : 0);
    let word = '';
    for (let i = 0; i < syllables; i++) word += pick(ONSETS) + pick(VOWELS) + (i === syllables - 1 || rnd() < 0.15 ? pick(CODAS) : '');
    if (seen.has(word) || RESERVED.has(word)) continue;
    seen.add(word);
    words.push(word);
  }
  vocabularyCache = words;
  return words;
}

const drawWord = zipf(VOCABULARY, ZIPF_S);
const drawTopic = zipf(TOPICS, 1.0);
/** Each topic's words: mostly mid-frequency and rarer ones, as a subject's own terms are. */
const topicWords: number[][] = Array.from({ length: TOPICS }, (_, t) => {
  const rnd = random(seedOf(2, t));
  return Array.from({ length: TOPIC_WORDS }, () => Math.floor(BANDS.mid[0] + rnd() * 20_000));
});

/** Item i's text: about `bytes` bytes (0.75× to 1.25×) of markdown. */
export function docContent(i: number, bytes: number): string {
  const rnd = random(seedOf(3, i));
  const words = vocabulary();
  const topic = topicWords[drawTopic(rnd)] as number[];
  const word = (): string => words[rnd() < TOPIC_SHARE ? (topic[Math.floor(rnd() * topic.length)] as number) : drawWord(rnd)] as string;
  const capital = (w: string): string => w.charAt(0).toUpperCase() + w.slice(1);
  const phrase = (min: number, max: number): string => Array.from({ length: min + Math.floor(rnd() * (max - min + 1)) }, word).join(' ');
  const sentence = (): string => {
    const parts = [phrase(3, 8)];
    if (rnd() < 0.4) parts.push(phrase(3, 7));
    return `${capital(parts.join(', '))}.`;
  };
  const paragraph = (): string => Array.from({ length: 2 + Math.floor(rnd() * 4) }, sentence).join(' ');
  const target = Math.round(bytes * (0.75 + 0.5 * rnd()));
  const out: string[] = [`# ${capital(phrase(3, 6))}\n\n${paragraph()}\n`];
  let length = out[0]?.length ?? 0;
  // Blocks are ~150 bytes: stopping short of the target by half of one centres the sizes on it.
  while (length < target - 75) {
    const roll = rnd();
    const block =
      roll < 0.2
        ? `\n## ${capital(phrase(2, 4))}\n`
        : roll < 0.4
          ? `\n${Array.from({ length: 2 + Math.floor(rnd() * 4) }, () => `- ${phrase(3, 9)}`).join('\n')}\n`
          : roll < 0.45
            ? `\nSee \`${word()}_${word()}\` and [${word()}](../${word()}/${word()}.md).\n`
            : `\n${paragraph()}\n`;
    out.push(block);
    length += block.length;
  }
  return out.join('');
}

export interface SearchQuery {
  q: string;
  /** Which bands its words come from ("common+mid", "topic pair", "prefix"...). */
  kind: string;
}

/** The queries' words from a band, log-uniformly over its ranks (frequent words come up as often as rare ones). */
function wordFrom(band: Band, rnd: () => number): string {
  const [from, to] = BANDS[band];
  const rank = Math.floor(Math.exp(Math.log(from) + rnd() * (Math.log(to) - Math.log(from))));
  return vocabulary()[Math.min(to - 1, rank)] as string;
}

/** Two-word queries per 20: 3 common+common, 4 common+mid, 3 mid+mid, 5 of one topic, 3 mid+rare, 2 rare+rare. */
const MIX: Array<[string, number]> = [
  ['common+common', 3],
  ['common+mid', 4],
  ['mid+mid', 3],
  ['topic pair', 5],
  ['mid+rare', 3],
  ['rare+rare', 2],
];

/** `count` two-word queries, in a fixed order that mixes the classes; `seed` gives another list of the same mix. */
export function twoWordQueries(count: number, seed: number): SearchQuery[] {
  const rnd = random(seedOf(4, seed));
  const kinds = MIX.flatMap(([kind, n]) => Array<string>(n).fill(kind));
  const out: SearchQuery[] = [];
  while (out.length < count) {
    const kind = kinds[out.length % kinds.length] as string;
    let pair: [string, string];
    if (kind === 'topic pair') {
      const topic = topicWords[drawTopic(rnd)] as number[];
      const a = Math.floor(rnd() * topic.length);
      const b = (a + 1 + Math.floor(rnd() * (topic.length - 1))) % topic.length;
      pair = [vocabulary()[topic[a] as number] as string, vocabulary()[topic[b] as number] as string];
    } else {
      const [x, y] = kind.split('+') as [Band, Band];
      pair = [wordFrom(x, rnd), wordFrom(y, rnd)];
    }
    if (pair[0] !== pair[1]) out.push({ q: pair.join(' '), kind });
  }
  return out;
}

/** One common word per query. */
export function commonWordQueries(count: number): SearchQuery[] {
  const rnd = random(seedOf(5));
  return Array.from({ length: count }, () => ({ q: wordFrom('common', rnd), kind: 'common word' }));
}

/** `abc*`: the first three letters of a mid-frequency word (a prefix shared by many words). */
export function prefixQueries(count: number): SearchQuery[] {
  const rnd = random(seedOf(6));
  return Array.from({ length: count }, () => ({ q: `${wordFrom('mid', rnd).slice(0, 3)}*`, kind: 'prefix' }));
}

/** Counts, as the items are written, how many match each query (every word, or a word with the prefix, in the item). */
export class HitCounter {
  private readonly postings = new Map<string, number[]>();

  constructor(private readonly queries: readonly SearchQuery[]) {
    for (const { q } of queries) for (const term of q.split(' ')) this.postings.set(term, []);
  }

  add(i: number, text: string): void {
    for (const token of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
      for (const term of [token, `${token.slice(0, 3)}*`]) {
        const list = this.postings.get(term);
        if (list && list[list.length - 1] !== i) list.push(i);
      }
    }
  }

  /** The queries, each with its number of matching items. */
  counts(): Array<SearchQuery & { hits: number }> {
    return this.queries.map((query) => {
      const lists = query.q.split(' ').map((t) => this.postings.get(t) ?? []);
      const [first, ...rest] = lists.sort((a, b) => a.length - b.length);
      const sets = rest.map((l) => new Set(l));
      return { ...query, hits: (first ?? []).filter((i) => sets.every((s) => s.has(i))).length };
    });
  }
}

/** The queries of the search phase, fixed: two-word ones to warm up with and others to time, common words, prefixes. */
export function benchQueries(): { warmup: SearchQuery[]; timed: SearchQuery[]; common: SearchQuery[]; prefix: SearchQuery[] } {
  return { warmup: twoWordQueries(100, 2), timed: twoWordQueries(400, 1), common: commonWordQueries(100), prefix: prefixQueries(100) };
}

/** Item texts of ~`bytes` each, counting as they are written how many items each of benchQueries() matches. */
export function countedCorpus(bytes: number): { content(i: number): string; hits(): Record<string, number> } {
  const q = benchQueries();
  const counter = new HitCounter([...q.warmup, ...q.timed, ...q.common, ...q.prefix]);
  return {
    content: (i) => {
      const text = docContent(i, bytes);
      counter.add(i, text);
      return text;
    },
    hits: () => Object.fromEntries(counter.counts().map((c) => [c.q, c.hits])),
  };
}
