import { setTimeout as sleep } from 'node:timers/promises';
import { Option, type Command } from 'commander';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { ChangeView } from '../domain/changes.js';
import type { ApiClient } from './apiClient.js';
import { ApiError, CliError, ConnectionFailed } from './errors.js';
import { client, withTarget, type Target } from './itemTarget.js';
import { intIn, print } from './output.js';

/** One event of the stream: a commit's change-feed entries as the key sees them (README, The event stream). */
interface CommitEvent {
  commitId: string;
  timestamp: string;
  changes: ChangeView[];
}

/** A change as `item changes` and `item watch` print it: time, commit (short), change, path. */
function changeLine(c: ChangeView): string {
  return `${c.timestamp}\t${c.commitId.slice(0, 12)}\t${c.change}\t${c.path}`;
}

/** The server's `retry:` until it says otherwise (it sends 2000). */
const DEFAULT_RETRY_MS = 2000;
/** The longest wait between two attempts while the server stays away. */
const MAX_RETRY_MS = 30_000;
/** Statuses of a server stopping or starting (or a proxy before it), and of a stream slot not yet freed. */
const TRANSIENT = new Set([429, 502, 503, 504]);

interface WatchOptions extends Target {
  since?: string;
  count?: number;
  /** Seconds without a byte (not even a heartbeat) after which the connection counts as dead. */
  idle: number;
}

/** What ended one connection: the server's `end` event (with where to go on from), the body's end, or a failure. */
type Ending = { kind: 'done' } | { kind: 'end'; reason: string; lastEventId: string | null } | { kind: 'closed' } | { kind: 'failed'; reason: string };

/**
 * `knowledge-store item changes`: GET /changes once, for a script that polls (the head it prints is the next
 * `--since`). `knowledge-store item watch`: GET /events as lines, one per change, printed as each commit comes (`tail -f` for
 * the store). The stream resumes where it was after a dropped connection, a server restart or a slow-reader
 * end, with the last id it printed as `Last-Event-ID`: no gap, no duplicate (the server computes events from
 * main's history). A refusal (a bad key, an unknown --since, too many streams) ends it with the server's message,
 * and so does a revoked key; a server that is not there at the first attempt is a failure, one that goes away
 * later (refused, 502-504, or 429 while its old stream's slot is freed) is waited for, at the server's retry
 * interval, growing to 30 s.
 */
export function addWatchCommand(item: Command): void {
  withTarget(item.command('changes').description('what changed since a commit, once (the change feed): a line per change, then the head to ask from next time'))
    .option('--since <commit>', 'the head a previous call printed (without it: only the current head)')
    .action(async (opts: Target & { since?: string }) => {
      const { data } = await client(opts).call<{ head: string; changes: ChangeView[] }>({ path: '/changes', query: { since: opts.since } });
      const lines = data.changes.map(changeLine);
      print(opts, [...lines, `head\t${data.head}`].join('\n'), data);
    });


  withTarget(item.command('watch').description('print each change as it is committed (the event stream); resumes after a dropped connection'))
    .option('--since <commit>', 'start after this commit (default: with the next one)')
    .addOption(new Option('--count <n>', 'stop after this many commits').argParser(intIn(1, 1_000_000)))
    .addOption(new Option('--idle <seconds>', 'connect again when nothing, not even a heartbeat (every 15 s), came for this long').argParser(intIn(1, 3600)).default(45))
    .action(async (opts: WatchOptions) => {
      await watch(client(opts), opts, (line) => process.stdout.write(`${line}\n`), (line) => process.stderr.write(`knowledge-store: ${line}\n`));
    });
}

async function watch(api: ApiClient, opts: WatchOptions, out: (line: string) => void, note: (line: string) => void): Promise<void> {
  let lastId = opts.since;
  let retryMs = DEFAULT_RETRY_MS;
  let failures = 0;
  let connected = false;
  let printed = 0;
  for (;;) {
    const ending = await connectOnce(api, lastId, opts.idle * 1000, {
      onEvent: (id, event) => {
        lastId = id;
        printed += 1;
        if (opts.json) out(JSON.stringify(event));
        else for (const c of event.changes) out(changeLine(c));
        return opts.count !== undefined && printed >= opts.count;
      },
      onRetry: (ms) => (retryMs = ms),
      onOpen: () => {
        if (failures > 0) note(`connected again, going on after ${lastId ?? 'the newest commit'}`);
        connected = true;
        failures = 0;
      },
      firstAttempt: !connected,
    });
    if (ending.kind === 'done') return;
    if (ending.kind === 'end') {
      if (ending.reason === 'key-revoked') throw new StreamEnded('the key was revoked while it listened');
      lastId = ending.lastEventId ?? lastId;
    }
    failures += 1;
    const wait = Math.min(MAX_RETRY_MS, retryMs * 2 ** Math.min(failures - 1, 4));
    const why = ending.kind === 'end' ? `the server ended the stream (${ending.reason})` : ending.kind === 'closed' ? 'the stream closed' : ending.reason;
    note(`${why}; connecting again in ${(wait / 1000).toFixed(wait < 1000 ? 1 : 0)} s`);
    await sleep(wait);
  }
}

/** The stream ended for good by the server (a revoked key): exit 1, as a refusal. */
class StreamEnded extends CliError<Record<string, never>> {
  constructor(message: string) {
    super('API_ERROR', message, {});
  }
}

interface ConnectHandlers {
  /** Prints a commit's event; true when --count is reached. */
  onEvent(id: string, event: CommitEvent): boolean;
  onRetry(ms: number): void;
  onOpen(): void;
  /** A server not answering at all is then a failure (nothing was ever connected), not a wait. */
  firstAttempt: boolean;
}

/** One connection, read until it ends; what ended it. Refusals (ApiError) are thrown: retrying would not help. */
async function connectOnce(api: ApiClient, lastId: string | undefined, idleMs: number, on: ConnectHandlers): Promise<Ending> {
  const abort = new AbortController();
  let res: Response;
  try {
    res = await api.stream({ path: '/events', headers: lastId ? { 'Last-Event-ID': lastId } : {}, signal: abort.signal });
  } catch (err) {
    // Once connected, a server away or restarting (refused, 502-504 from it or a proxy, a stream slot not yet
    // freed) is waited for; at the first attempt, and for any other refusal, the answer is the answer.
    if (!on.firstAttempt && (err instanceof ConnectionFailed || (err instanceof ApiError && TRANSIENT.has(err.data.status)))) return { kind: 'failed', reason: err.message };
    throw err;
  }
  if (!res.body) return { kind: 'closed' };
  on.onOpen();
  let ending: Ending | undefined;
  let bad: Error | undefined;
  const parser = createParser({
    onRetry: (ms) => on.onRetry(ms),
    onEvent: (message: EventSourceMessage) => {
      if (ending) return;
      try {
        if (message.event === 'end') {
          const data = JSON.parse(message.data) as { reason?: unknown; lastEventId?: unknown };
          ending = { kind: 'end', reason: String(data.reason ?? 'unknown'), lastEventId: typeof data.lastEventId === 'string' ? data.lastEventId : null };
        } else if (message.id && on.onEvent(message.id, JSON.parse(message.data) as CommitEvent)) ending = { kind: 'done' };
      } catch (err) {
        bad = err as Error;
        ending = { kind: 'failed', reason: 'unreadable event' };
      }
    },
  });
  const decoder = new TextDecoder();
  // A connection that went quiet (a laptop asleep, a network changed under a half-open socket) is given up after
  // `idleMs` without a byte: the server's heartbeat comes every 15 s on an idle stream. The read it interrupts is
  // pending on a live socket, unlike the break below.
  let idle: NodeJS.Timeout | undefined;
  const quiet = (): void => {
    clearTimeout(idle);
    idle = setTimeout(() => {
      ending ??= { kind: 'failed', reason: `nothing came for ${idleMs / 1000} s, not even a heartbeat` };
      abort.abort();
    }, idleMs);
  };
  quiet();
  try {
    for await (const chunk of res.body) {
      quiet();
      parser.feed(decoder.decode(chunk as Uint8Array, { stream: true }));
      // Left by break, which cancels the body: an abort of the request from here, with the body's last bytes already
      // read, left the loop's next read pending for good on Node 20 (the process exited 13, its socket closed).
      if (ending) break;
    }
  } catch (err) {
    if (!ending) return { kind: 'failed', reason: `the connection failed (${(err as Error).message})` };
  } finally {
    clearTimeout(idle);
  }
  if (bad) throw new ApiError({ status: res.status, url: res.url, message: `the server sent an event that is not JSON: ${bad.message}` });
  return ending ?? { kind: 'closed' };
}
