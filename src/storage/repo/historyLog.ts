import type { Logger } from '../../common/log.js';
import type { ItemAction } from './commitMessage.js';
import { historyEntry, perItem, type CommitFacts, type HistoryEntry, type ItemChange } from './historyEntry.js';

export { historyEntry, itemChanges, perItem, type CommitFacts, type HistoryEntry, type ItemChange } from './historyEntry.js';
import { unlessMissing, writeFileDurable } from '../fs/durable.js';
import type { FsPromises } from '../fs/fs.js';
import { SharedStrings } from '../../common/sharedStrings.js';
import { withoutYoungGrowth } from '../../common/youngGeneration.js';
import { ITEMS_PER_TURN, nextTurn } from '../../common/turn.js';
import { eachJsonLine, firstLine, linesText } from '../../common/jsonLines.js';

/** The first line of the log file: the format, so a future layout is rebuilt rather than misread. */
const HEADER = '{"knowledgeHistoryLog":1}';

/**
 * Every commit of main, oldest first, with a per-item index (read from the
 * commits' trailers): an item's history is a map lookup, never `git log -- path`,
 * which walks the whole repository.
 *
 * It is derived data, kept beside the repository in `knowledge-history.jsonl`
 * (inside the bare repository's directory: git ignores it and a clone does not
 * carry it). Lines are appended after each published batch, without fsync:
 * at startup the log is checked against the branch, and commits it lacks are
 * read from git (from the head back to the last commit it knows), so a lost
 * tail costs a short catch-up, and a log of another history a full rebuild.
 */
export class HistoryLog {
  private entries: HistoryEntry[] = [];
  private readonly positions = new Map<string, number>();
  private readonly byItem = new Map<string, HistoryEntry[]>();

  private constructor(
    private readonly fs: FsPromises,
    private readonly file: string,
    private readonly logger: Logger,
  ) {}

  static async load(args: {
    fs: FsPromises;
    gitdir: string;
    head: string | null;
    readCommit: (oid: string) => Promise<CommitFacts>;
    /** C git's first-parent log from a commit, newest first: a log rebuilt from nothing reads it in one stream. */
    walk?: (head: string) => AsyncIterable<CommitFacts & { commitId: string }>;
    logger: Logger;
    /** Strings shared with what is loaded beside the log (the index snapshot names the same items). */
    shared?: SharedStrings;
  }): Promise<HistoryLog> {
    const log = new HistoryLog(args.fs, `${args.gitdir}/knowledge-history.jsonl`, args.logger);
    // Read without growing V8's young generation: nearly all of it is kept (see withoutYoungGrowth). Entries are made
    // and indexed in slices, with a turn of the event loop between (at 51,000 commits, in one piece, ~180 ms).
    const stored = await withoutYoungGrowth(async () => {
      const read = await log.readStored(args.shared ?? new SharedStrings());
      for (let i = 0; i < read.length; i++) {
        if (i > 0 && i % ITEMS_PER_TURN === 0) await nextTurn();
        log.push(read[i] as HistoryEntry);
      }
      return read;
    });
    const missing: HistoryEntry[] = [];
    let cursor = args.head;
    if (args.walk && cursor !== null && stored.length === 0) {
      try {
        for await (const commit of args.walk(cursor)) {
          if (commit.commitId !== cursor) throw new Error(`git log gave ${commit.commitId} where ${cursor} was expected`);
          missing.push(historyEntry(commit.commitId, commit));
          cursor = commit.parent;
          if (cursor === null) break;
        }
      } catch (err) {
        // What was read stands (each entry checked against the chain); the rest is read commit by commit.
        args.logger.warn('history log: git log failed; reading the commits one by one', { error: String(err), commitsRead: missing.length });
      }
    }
    while (cursor !== null && !log.positions.has(cursor)) {
      const facts = await args.readCommit(cursor);
      missing.push(historyEntry(cursor, facts));
      cursor = facts.parent;
    }
    const keep = cursor === null ? 0 : (log.positions.get(cursor) as number) + 1;
    const rewrite = keep !== stored.length || missing.length > 0;
    if (keep !== stored.length) log.reset(stored.slice(0, keep));
    missing.reverse().forEach((e) => log.push(e));
    if (rewrite) {
      if (missing.length > 0) args.logger.info('history log caught up', { commitsRead: missing.length, kept: keep });
      await log.persistAll();
    }
    return log;
  }

  get head(): string | null {
    return this.entries[this.entries.length - 1]?.commitId ?? null;
  }

  get size(): number {
    return this.entries.length;
  }

  /** The item's commits, oldest first (version 1 is the first). */
  itemHistory(itemId: string): readonly HistoryEntry[] {
    return this.byItem.get(itemId) ?? [];
  }

  /** Entries after `commitId`, oldest first; undefined when the commit is not on main. */
  after(commitId: string): readonly HistoryEntry[] | undefined {
    const at = this.positions.get(commitId);
    return at === undefined ? undefined : this.entries.slice(at + 1);
  }

  /** How many entries follow `commitId` (0 for the head), without copying them; undefined when it is not on main. */
  countAfter(commitId: string): number | undefined {
    const at = this.positions.get(commitId);
    return at === undefined ? undefined : this.entries.length - 1 - at;
  }

  has(commitId: string): boolean {
    return this.positions.has(commitId);
  }

  /** The commit's entry, or undefined when it is not on main. */
  get(commitId: string): HistoryEntry | undefined {
    const at = this.positions.get(commitId);
    return at === undefined ? undefined : this.entries[at];
  }

  /** Every commit of main, oldest first. */
  all(): readonly HistoryEntry[] {
    return this.entries;
  }

  /** Records newly published commits (in order, continuing the head) and appends them to the file. */
  async append(entries: readonly HistoryEntry[]): Promise<void> {
    entries.forEach((e) => this.push(e));
    try {
      await this.fs.appendFile(this.file, entries.map((e) => `${serialize(e)}\n`).join(''));
    } catch (err) {
      // The log is a cache of the branch: the next start catches up from git.
      this.logger.warn('could not append to the history log', { error: String(err) });
    }
  }

  private push(entry: HistoryEntry): void {
    this.positions.set(entry.commitId, this.entries.length);
    this.entries.push(entry);
    for (const one of perItem([entry])) {
      if (!one.item) continue;
      const list = this.byItem.get(one.item.id);
      // Made with its first entry: an empty array's first push reserves room for 17.
      if (!list) this.byItem.set(one.item.id, [one]);
      else list.push(one);
    }
  }

  private reset(entries: HistoryEntry[]): void {
    this.entries = [];
    this.positions.clear();
    this.byItem.clear();
    entries.forEach((e) => this.push(e));
  }

  private async persistAll(): Promise<void> {
    await writeFileDurable(this.fs, this.file, await linesText([...this.entries], serialize, HEADER));
  }

  /** The stored entries up to the first line that is damaged or does not continue the chain. */
  private async readStored(shared: SharedStrings): Promise<HistoryEntry[]> {
    const bytes = await unlessMissing(this.fs.readFile(this.file));
    if (bytes === null) return [];
    const header = firstLine(bytes);
    if (header.text !== HEADER) return [];
    const out: HistoryEntry[] = [];
    await eachJsonLine(bytes, header.next, (value) => {
      const entry = fromFields(value, shared);
      const before = out[out.length - 1];
      if (!entry || entry.parent !== (before?.commitId ?? null)) return false;
      // The same commit id as the entry before: one string, not two.
      if (before) entry.parent = before.commitId;
      out.push(entry);
      return true;
    });
    return out;
  }
}

/**
 * One line per commit. A move's line has a tenth field, its `from` path; lines without one read as
 * before, so a log written before moves existed is kept, not rebuilt. A commit of several items has
 * an eleventh: every item, as `[id, path, action, from?]` (the first one also in fields 3-5 and 10).
 */
function serialize(e: HistoryEntry): string {
  const fields: unknown[] = [e.commitId, e.parent, e.item?.id ?? null, e.item?.path ?? null, e.item?.action ?? null, e.message, e.author.name, e.author.email, e.timestamp];
  if (e.items) {
    const all = e.items.map((i) => (i.from === undefined ? [i.id, i.path, i.action] : [i.id, i.path, i.action, i.from]));
    return JSON.stringify([...fields, e.item?.from ?? null, all]);
  }
  return JSON.stringify(e.item?.from === undefined ? fields : [...fields, e.item.from]);
}

function parseItems(v: unknown, shared: SharedStrings): ItemChange[] | null {
  if (!Array.isArray(v) || v.length < 2) return null;
  const out: ItemChange[] = [];
  for (const i of v as unknown[]) {
    if (!Array.isArray(i) || i.length < 3 || i.length > 4 || !i.every((f) => typeof f === 'string')) return null;
    const [id, path, action, from] = i as [string, string, ItemAction, string | undefined];
    out.push({ id: shared.string(id), path: shared.string(path), action: shared.string(action), ...(from === undefined ? {} : { from }) });
  }
  return out;
}

/** One line's fields as an entry, or null when they are not one. */
function fromFields(v: unknown, shared: SharedStrings): HistoryEntry | null {
  if (!Array.isArray(v) || v.length < 9 || v.length > 11) return null;
  const items = v.length === 11 ? parseItems(v[10], shared) : undefined;
  if (items === null) return null;
  const [commitId, parent, id, path, action, message, name, email, timestamp, from] = v as [
    string,
    string | null,
    string | null,
    string | null,
    ItemAction | null,
    string,
    string,
    string,
    number,
    string | null | undefined,
  ];
  if (typeof commitId !== 'string' || typeof message !== 'string' || typeof timestamp !== 'number') return null;
  if (from !== undefined && from !== null && typeof from !== 'string') return null;
  const item = id && path && action ? { id: shared.string(id), path: shared.string(path), action: shared.string(action), ...(from ? { from } : {}) } : undefined;
  return {
    commitId,
    parent,
    // A commit of several items names its first one twice (fields 3-5 and 11): one object.
    ...(item ? { item: items?.[0] && sameChange(items[0], item) ? items[0] : item } : {}),
    ...(items ? { items } : {}),
    message,
    author: shared.object(`${name}\n${email}`, () => ({ name, email })),
    timestamp,
  };
}

function sameChange(a: ItemChange, b: ItemChange): boolean {
  return a.id === b.id && a.path === b.path && a.action === b.action && a.from === b.from;
}
