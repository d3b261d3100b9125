import { seenAs, type EventFeed } from '../../domain/events.js';
import type { Actor } from '../../domain/keys.js';
import type { OrgRepo } from '../../storage/repo/orgRepo.js';
import { nextTurn } from '../../common/turn.js';

/** What a stream walks the commits with (the EventFeed). */
export type EventWalker = Pick<EventFeed, 'walk'>;

/** Commits walked per turn: a listener far behind catches up in turns, each bounded in time and memory. */
export const WALK_TURN = 64;
/**
 * Commits walked between two looks at the event loop's I/O: a wake-up's turn walks up to WALK_TURN commits
 * (~30 µs each: the filter, the JSON), in the writer's process, and a request that arrives meanwhile (the next PUT)
 * would wait for all of them: in slices, it waits for one.
 */
const WALK_SLICE = 8;

/** One turn of a stream's walk: the bytes to write (one socket write), and where the stream then stands. */
export interface EventChunk {
  /** The events of the turn, as they go on the wire (empty when nothing walked is visible to the key). */
  bytes: Buffer;
  /** The id of the last event in `bytes`, or null when there is none. */
  lastSent: string | null;
  /** The last commit walked (the stream's next cursor). */
  cursor: string | null;
  walked: number;
  /** The turn stopped because `bytes` no longer fit the room given: wait for the socket to drain. */
  full: boolean;
}

/**
 * Walks the commits after `cursor` as `actor` sees them, up to WALK_TURN commits or until the events no
 * longer fit `room` bytes (the event that crosses it is kept: a turn always moves on). Null when `stop`
 * says so midway (the client went): nothing is to be written then.
 */
export async function walkChunk(args: { feed: EventWalker; repo: OrgRepo; actor: Actor; cursor: string | null; room: number; stop?: () => boolean }): Promise<EventChunk | null> {
  const { feed, repo, actor, room } = args;
  const parts: Buffer[] = [];
  let size = 0;
  let lastSent: string | null = null;
  let cursor = args.cursor;
  let walked = 0;
  let full = false;
  for await (const { commitId, json } of feed.walk({ repo, actor, cursor })) {
    if (args.stop?.()) return null;
    if (json !== null) {
      const part = Buffer.from(`id: ${commitId}\ndata: ${json}\n\n`);
      parts.push(part);
      size += part.length;
      lastSent = commitId;
    }
    cursor = commitId;
    full = size > room;
    if (full || ++walked === WALK_TURN) break;
    if (walked % WALK_SLICE === 0) await nextTurn();
  }
  if (args.stop?.()) return null;
  return { bytes: parts.length === 1 ? (parts[0] as Buffer) : Buffer.concat(parts, size), lastSent, cursor, walked, full };
}

const framedTurns = new WeakMap<EventChunk, Buffer>();

/**
 * The turn as one HTTP/1.1 chunk (`<size in hex>\r\n<bytes>\r\n`), made once per turn however many streams
 * write it: what res.write would frame again for each stream, in three corked writes.
 */
export function chunkFrame(turn: EventChunk): Buffer {
  let framed = framedTurns.get(turn);
  if (!framed) {
    framed = Buffer.concat([Buffer.from(`${turn.bytes.length.toString(16)}\r\n`), turn.bytes, CRLF]);
    framedTurns.set(turn, framed);
  }
  return framed;
}

const CRLF = Buffer.from('\r\n');

/** Bytes of shared turns kept at once (all organizations): past it, a turn is walked for its one stream. */
const SHARED_BYTES = 8 * 1024 * 1024;

/** How long an organization's shared turns outlive their wake-up when no commit comes to replace them. */
const SHARED_MS = 2_000;

interface Turns {
  head: string | null;
  turns: Map<string, Promise<EventChunk | null>>;
  bytes: number;
  timer: NodeJS.Timeout;
}

/**
 * The turns of streams that stand at the same commit and see it alike (same role and scopes), walked once
 * and written by each as one shared Buffer. In the steady state every stream of an organization is at the
 * head when a commit comes, so a wake-up of 200 streams walks and encodes the new commits once per view
 * instead of 200 times; what is left per stream is its socket write.
 *
 * Only for a stream whose socket is idle (nothing queued): then its own walk would stop at exactly the
 * same place (its room is the whole buffer), so sharing changes no byte of any stream. A stream with bytes
 * still queued walks alone (walkChunk with its own room), as before.
 */
export class SharedChunks {
  private readonly turns = new TurnCache();

  constructor(
    private readonly feed: EventWalker,
    private readonly bufferBytes: number,
  ) {}

  /** The turn of a stream with an idle socket at `cursor`. */
  next(args: { repo: OrgRepo; actor: Actor; cursor: string | null }): Promise<EventChunk | null> {
    const { repo, actor, cursor } = args;
    return this.turns.get({ place: repo, head: repo.headCommit, key: `${seenAs(actor)}\n\n${cursor}`, walk: () => walkChunk({ feed: this.feed, repo, actor, cursor, room: this.bufferBytes }) });
  }
}

/**
 * Turns kept by organization (`place`: the repository here, its stand-in in the fan-out process) and by
 * what the turn depends on besides the commits (`key`: view and cursor). Kept while the organization's head
 * is the same (a new head starts afresh: the turns of the old one are the prefixes nobody will ask for once
 * woken), at most SHARED_MS, and at most SHARED_BYTES in all. The one cache of both processes (SharedChunks
 * here, the fan-out process's remote turns).
 */
export class TurnCache {
  private readonly byPlace = new WeakMap<object, Turns>();
  private bytes = 0;

  get(args: { place: object; head: string | null; key: string; walk: () => Promise<EventChunk | null> }): Promise<EventChunk | null> {
    const { place, key, walk } = args;
    const turns = this.turnsOf(place, args.head);
    const kept = turns.turns.get(key);
    if (kept) return kept;
    if (this.bytes >= SHARED_BYTES) return walk();
    const turn = walk();
    turns.turns.set(key, turn);
    turn.then(
      (chunk) => {
        // Counted once built (unless already dropped): the bound is on bytes held, not on turns.
        if (!chunk || turns.turns.get(key) !== turn || this.byPlace.get(place) !== turns) return;
        turns.bytes += chunk.bytes.length;
        this.bytes += chunk.bytes.length;
      },
      // A failed walk is not kept: the next stream tries again.
      () => {
        if (turns.turns.get(key) === turn) turns.turns.delete(key);
      },
    );
    return turn;
  }

  private turnsOf(place: object, head: string | null): Turns {
    const kept = this.byPlace.get(place);
    if (kept?.head === head) return kept;
    if (kept) this.drop(place, kept);
    const turns: Turns = { head, turns: new Map(), bytes: 0, timer: setTimeout(() => this.drop(place, turns), SHARED_MS) };
    turns.timer.unref();
    this.byPlace.set(place, turns);
    return turns;
  }

  private drop(place: object, turns: Turns): void {
    clearTimeout(turns.timer);
    if (this.byPlace.get(place) === turns) this.byPlace.delete(place);
    this.bytes -= turns.bytes;
    turns.bytes = 0;
    turns.turns.clear();
  }
}
