import { fork, type ChildProcess } from 'node:child_process';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../common/log.js';
import { seenAs, type EventFeed } from '../../domain/events.js';
import type { OrgRepo } from '../../storage/repo/orgRepo.js';
import { walkChunk } from './eventChunks.js';
import { settingsArgument, type FromFanOut, type ToFanOut } from './fanOutMessages.js';
import { forkExecArgv } from '../../common/workerScript.js';
import { lowerPriority, untracked } from './fanOutProcess.js';
import { writeStreamHead, type StreamSocket } from './sseStream.js';
import type { HostedStream, StreamHost } from './streamHost.js';
import type { EventStreamSettings } from './streamLimits.js';

const CHILD_FILE = fileURLToPath(new URL(`./fanOutChild${extname(fileURLToPath(import.meta.url))}`, import.meta.url));

/** The shortest time between two starts of the fan-out process: one that keeps dying does not spin. */
const RESTART_MS = 1000;

/** How long a stopping fan-out process has to go once its channel is closed, before it is killed. */
const EXIT_MS = 2000;

interface Handed {
  stream: HostedStream;
  child: ChildProcess;
  release: () => void;
  done: () => void;
}

/**
 * The event streams written by a process apart from the writer (`serve`'s default): this process
 * authenticates, authorizes, counts and starts each stream (its head), then hands the socket over to the
 * fan-out process (fanOutChild.ts) with what the stream needs. Per published batch this process sends one
 * message per organization (`published`); the fan-out process asks for each view's turn once per wake-up
 * (walked and filtered here, where the repository is: also for a resumption far back, read from git) and
 * does the rest per stream: framing, socket writes, heartbeats, slow readers.
 *
 * Supervised: should the process die, its streams end (their sockets close with it, and the clients resume
 * with Last-Event-ID), their slots are released, and it is started again. It is started with the first
 * stream, and stopped with the server (close); it also exits when this process does (its channel closes).
 */
export class ChildStreamHost implements StreamHost {
  private child: ChildProcess | null = null;
  private exited: Promise<void> = Promise.resolve();
  private ready: Promise<ChildProcess> | null = null;
  private startedAt = 0;
  private readonly streams = new Map<number, Handed>();
  private readonly orgs = new Map<OrgRepo, { count: number; unwatch: () => void }>();
  private nextId = 1;
  private nextReq = 1;
  /** Sockets given to child.send whose message has not gone yet, and who waits for them (settle). */
  private readonly inFlight = new Set<number>();
  /** Streams of `serve` not yet in flight (their head being written, or the fan-out process starting). */
  private starting = 0;
  private sent: Array<() => void> = [];
  private readonly settling = new Map<number, () => void>();
  private closed = false;

  constructor(private readonly deps: { feed: EventFeed; settings: EventStreamSettings; logger: Logger }) {}

  async serve(stream: HostedStream): Promise<void> {
    // On its way from now (settle waits for it): its head is written, and the fan-out process may still be starting.
    this.starting += 1;
    let out: StreamSocket;
    let child: ChildProcess;
    try {
      out = await writeStreamHead(stream.res, true);
      child = await this.running();
    } catch (err) {
      this.starting -= 1;
      this.whenNoneOnTheWay();
      throw err;
    }
    // In flight from below, in this same turn: settle goes on waiting for it.
    this.starting -= 1;
    const { repo, actor } = stream;
    const id = this.nextId++;
    await new Promise<void>((resolve) => {
      const handed: Handed = { stream, child, release: () => undefined, done: resolve };
      this.streams.set(id, handed);
      this.watch(repo);
      handed.release = stream.register(() => this.post(child, { type: 'end', id }));
      const msg: ToFanOut = { type: 'open', id, orgId: repo.orgId, head: repo.headCommit, view: seenAs(actor), keyId: actor.keyId, cursor: stream.cursor, chunked: out.chunked, requestId: stream.requestId };
      // Sent with keepOpen, then destroyed here: the fan-out process has its own descriptor of the socket,
      // and this process lets go of its copy and of the request (a socket sent without keepOpen and then
      // destroyed would be counted off the HTTP server's connections twice).
      untracked(out.socket);
      this.inFlight.add(id);
      child.send(msg, out.socket, { keepOpen: true }, (err) => {
        out.socket.destroy();
        if (err) this.ended(id);
        this.gone(id);
      });
    });
  }

  async settle(): Promise<void> {
    // Sockets still on their way go first: a message without one would overtake them (child_process sends
    // one socket at a time, each once the last is acknowledged), and their streams would not be counted yet.
    // So do streams not yet sent: counted by the route, waiting for their head to be written or for the fan-out
    // process to start (a client that closes its first streams at once and opens new ones: a 429 otherwise).
    while (this.inFlight.size > 0 || this.starting > 0) await new Promise<void>((resolve) => this.sent.push(resolve));
    const child = this.child;
    if (!child?.connected) return;
    const req = this.nextReq++;
    return new Promise((resolve) => {
      this.settling.set(req, resolve);
      // Gone with the process: its streams have ended (onExit).
      void this.exited.then(() => this.settled(req));
      this.post(child, { type: 'settle', req });
    });
  }

  async close(graceMs: number): Promise<void> {
    this.closed = true;
    const child = this.child;
    if (!child) return;
    // Every stream ends (`event: end`, server-stopping) and its last bytes go; a client that does not take
    // them within the grace period loses them with the process.
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        child.off('message', onIdle);
        resolve();
      };
      const onIdle = (msg: FromFanOut): void => {
        if (msg.type === 'idle') done();
      };
      const timer = setTimeout(done, graceMs);
      child.on('message', onIdle);
      void this.exited.then(done);
      this.post(child, { type: 'closing' });
    });
    // The channel's end ends it (see fanOutChild.ts); one that does not go is killed.
    if (child.connected) child.disconnect();
    const kill = setTimeout(() => child.kill('SIGKILL'), EXIT_MS);
    await this.exited;
    clearTimeout(kill);
  }

  private running(): Promise<ChildProcess> {
    if (this.closed) return Promise.reject(new Error('the server is stopping'));
    return (this.ready ??= this.start());
  }

  private start(): Promise<ChildProcess> {
    this.startedAt = Date.now();
    const child = fork(CHILD_FILE, [settingsArgument(this.deps.settings)], {
      // Bytes go over the channel as bytes (a turn's events), not as JSON arrays of numbers.
      serialization: 'advanced',
      execArgv: forkExecArgv(),
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    this.child = child;
    lowerPriority(child, this.deps.logger);
    this.exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(this.onExit(child, code, signal))));
    child.on('message', (msg: FromFanOut) => this.receive(child, msg));
    // A failed spawn or send is reported here; the 'exit' that follows does the rest.
    child.on('error', (err) => this.deps.logger.warn('event fan-out process error', { error: String(err) }));
    const ready = new Promise<ChildProcess>((resolve, reject) => {
      child.on('message', (msg: FromFanOut) => {
        if (msg.type !== 'ready') return;
        this.deps.logger.info('event fan-out process started', { pid: child.pid });
        resolve(child);
      });
      void this.exited.then(() => reject(new Error('the event fan-out process exited before it was ready')));
    });
    ready.catch(() => undefined);
    return ready;
  }

  private onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.child === child) {
      this.child = null;
      this.ready = null;
    }
    let streams = 0;
    for (const [id, handed] of this.streams) {
      if (handed.child !== child) continue;
      // A socket still queued for the dead process is never sent (nor its callback called).
      this.gone(id);
      this.ended(id);
      streams += 1;
    }
    if (this.closed) return;
    this.deps.logger.warn('event fan-out process exited; starting it again', { pid: child.pid, code, signal, streamsEnded: streams });
    const restart = (): void => {
      if (!this.closed && !this.ready) this.ready = this.start();
    };
    setTimeout(restart, Math.max(0, this.startedAt + RESTART_MS - Date.now())).unref();
  }

  private receive(child: ChildProcess, msg: FromFanOut): void {
    switch (msg.type) {
      case 'turn': {
        const handed = this.streams.get(msg.id);
        if (!handed) return this.post(child, { type: 'turn', req: msg.req, chunk: null });
        const { repo, actor } = handed.stream;
        walkChunk({ feed: this.deps.feed, repo, actor, cursor: msg.cursor, room: msg.room }).then(
          (chunk) => this.post(child, { type: 'turn', req: msg.req, chunk }),
          (err: unknown) => this.post(child, { type: 'turn', req: msg.req, chunk: null, error: String(err) }),
        );
        return;
      }
      case 'key': {
        let check: Promise<boolean> = Promise.resolve(false);
        for (const handed of this.streams.values()) {
          if (handed.stream.actor.keyId !== msg.keyId) continue;
          check = handed.stream.keyValid();
          break;
        }
        check.then(
          (valid) => this.post(child, { type: 'key', req: msg.req, valid }),
          (err: unknown) => this.post(child, { type: 'key', req: msg.req, valid: false, error: String(err) }),
        );
        return;
      }
      case 'ended':
        return this.ended(msg.id);
      case 'settled':
        return this.settled(msg.req);
      case 'log':
        return this.deps.logger[msg.level](msg.msg, { ...msg.fields, process: 'event fan-out', pid: child.pid });
      case 'ready':
      case 'idle':
        return; // see start and close
    }
  }

  /** Stream `id`'s socket has gone to the fan-out process (or never will). */
  private gone(id: number): void {
    this.inFlight.delete(id);
    this.whenNoneOnTheWay();
  }

  private whenNoneOnTheWay(): void {
    if (this.inFlight.size === 0 && this.starting === 0) for (const resolve of this.sent.splice(0)) resolve();
  }

  private settled(req: number): void {
    this.settling.get(req)?.();
    this.settling.delete(req);
  }

  private ended(id: number): void {
    const handed = this.streams.get(id);
    if (!handed) return;
    this.streams.delete(id);
    this.unwatch(handed.stream.repo);
    handed.release();
    handed.done();
  }

  /** One watcher per organization with streams in the fan-out process: one message per wake-up. */
  private watch(repo: OrgRepo): void {
    let watched = this.orgs.get(repo);
    if (!watched) {
      const unwatch = this.deps.feed.watch(repo, () => {
        if (this.child) this.post(this.child, { type: 'published', orgId: repo.orgId, head: repo.headCommit });
      });
      this.orgs.set(repo, (watched = { count: 0, unwatch }));
    }
    watched.count += 1;
  }

  private unwatch(repo: OrgRepo): void {
    const watched = this.orgs.get(repo);
    if (!watched || --watched.count > 0) return;
    watched.unwatch();
    this.orgs.delete(repo);
  }

  private post(child: ChildProcess, msg: ToFanOut): void {
    // A process gone: its streams are ended by onExit; the message has nobody to go to.
    if (child.connected) child.send(msg, (err) => err && this.deps.logger.debug('event fan-out message lost', { error: String(err) }));
  }
}
