import type { TopDocs } from './topDocs.js';
import { topDocsBytes } from './topDocs.js';

/** Lists shorter than this are walked without top documents (their walk is short already). */
const TOP_FROM = 2048;
/**
 * Top documents kept per list: a sixteenth of it, from TOP_SIZE / 16 to TOP_SIZE (18 bytes each with its
 * share). Fewer leave two very common words (IDF floored, both in 90% of the items) to be looked up document by
 * document; measured in rankCost.ts --compare (README, Search, "Top documents").
 */
const TOP_SIZE = 2048;

/**
 * RankIndex's top documents (topDocs.ts) per term, made when a query first needs them (or right after it, see
 * `get`'s `later`) and made again once the list has grown by an eighth past what they cover (until then, its new
 * documents are walked as before), or once a compaction has moved the list (which rewrites the blocks they point
 * into: `drop`). A list they cannot serve (too many path matches) is remembered as such until it grows as much.
 */
export class TopDocsCache {
  private readonly byTerm = new Map<number, { top: TopDocs | undefined; at: number }>();
  private held = 0;
  readonly from: number;
  readonly size: number;

  constructor(tuning: { topFrom?: number; topSize?: number }) {
    this.from = tuning.topFrom ?? TOP_FROM;
    this.size = tuning.topSize ?? TOP_SIZE;
  }

  /**
   * The term's top documents (undefined: none for so short a list, or none possible), made by `build` when due; or,
   * when `later` is given, what is held (a stale set is still right: it only leaves more to the walk; none yet: the
   * walk alone), `later` being told to have them made after this query.
   */
  get(term: number, postings: number, build: (size: number) => TopDocs | undefined, later?: () => void): TopDocs | undefined {
    if (postings < this.from) return undefined;
    const held = this.byTerm.get(term);
    if (held && postings - held.at <= held.at / 8) return held.top;
    if (later) {
      later();
      return held?.top;
    }
    const top = build(Math.min(this.size, Math.max(1, this.size >> 4, postings >> 4)));
    this.held += (top ? topDocsBytes(top) : 0) - (held?.top ? topDocsBytes(held.top) : 0);
    this.byTerm.set(term, { top, at: postings });
    return top;
  }

  /** Forgets the term's top documents (a compaction moved its list: they name blocks of the old pool). */
  drop(term: number): void {
    const held = this.byTerm.get(term);
    if (!held) return;
    this.held -= held.top ? topDocsBytes(held.top) : 0;
    this.byTerm.delete(term);
  }

  /** Bytes of the typed arrays held. */
  get bytes(): number {
    return this.held;
  }
}
