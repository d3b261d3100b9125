import { promises as nodeFs } from 'node:fs';
import type { FileHandleLike, FsPromises } from '../../src/storage/fs/fs.js';

/** An fsync held by `GatedFs`: let it go on, or make it fail as a failing disk would. */
export interface HeldSync {
  /** The file or directory, relative to the root, with random parts of names replaced (see `short`). */
  path: string;
  release(): void;
  fail(err: Error): void;
}

/**
 * node's fs.promises, counting calls in flight and holding every fsync while `hold` is on: a test
 * then sees which fsyncs a write waits for at once (a round), and in which order, and can let each
 * go on or fail. `events` records renames and links (by target) and held fsyncs as they end.
 */
export class GatedFs {
  inFlight = 0;
  hold = false;
  readonly held: HeldSync[] = [];
  /** Every fsync ever held, taken out of `held` or not (see `letAllGo`). */
  private readonly everHeld: HeldSync[] = [];
  readonly events: string[] = [];
  readonly fs: FsPromises;

  constructor(private readonly root: string) {
    const track =
      <A extends unknown[], R>(name: string, fn: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        this.inFlight++;
        try {
          if (name === 'rename' || name === 'link') this.events.push(`${name} ${this.short(String(args[1]))}`);
          return await fn(...args);
        } finally {
          this.inFlight--;
        }
      };
    const base = nodeFs as unknown as FsPromises;
    const wrapped: Record<string, unknown> = {};
    for (const name of Object.keys(base) as Array<keyof FsPromises>) {
      const fn = base[name] as unknown as (...args: unknown[]) => Promise<unknown>;
      if (typeof fn === 'function') wrapped[name] = track(name, fn.bind(nodeFs));
    }
    wrapped.open = track('open', async (path: string, flags: string, mode?: number) => this.handle(await base.open(path, flags, mode), path));
    this.fs = wrapped as unknown as FsPromises;
  }

  /** A path below the root with its random parts replaced: temp packs, pack names, staged ref values. */
  short(path: string): string {
    return path
      .slice(this.root.length + 1)
      .replace(/tmp_(pack|idx)_[0-9a-f]+/, 'tmp_$1')
      .replace(/pack-[0-9a-f]+/, 'pack-*')
      .replace(/main\.next-[0-9a-f]+\.lock/, 'main.next');
  }

  private handle(h: FileHandleLike, path: string): FileHandleLike {
    return {
      write: (data) => this.tracked(() => h.write(data)),
      chmod: (mode) => this.tracked(() => h.chmod(mode)),
      close: () => this.tracked(() => h.close()),
      read: (b, o, l, p) => this.tracked(() => h.read(b, o, l, p)),
      stat: () => this.tracked(() => h.stat()),
      sync: async () => {
        if (this.hold) {
          const short = this.short(path);
          await new Promise<void>((release, fail) => {
            this.held.push({ path: short, release, fail });
            this.everHeld.push({ path: short, release, fail });
          });
          this.events.push(`synced ${short}`);
        }
        return this.tracked(() => h.sync());
      },
    };
  }

  private async tracked<R>(fn: () => Promise<R>): Promise<R> {
    this.inFlight++;
    try {
      return await fn();
    } finally {
      this.inFlight--;
    }
  }

  /** Resolves once nothing but held fsyncs has been in flight for a few turns of the event loop. */
  async quiet(): Promise<void> {
    for (let calm = 0, turns = 0; calm < 5; turns++) {
      await new Promise((r) => setImmediate(r));
      calm = this.inFlight === 0 ? calm + 1 : 0;
      if (turns > 100_000) throw new Error('the write never settled');
    }
  }

  /** Stops holding, and lets every fsync ever held go on (one let go or failed already stays as it was). */
  letAllGo(): void {
    this.hold = false;
    this.held.splice(0);
    for (const h of this.everHeld.splice(0)) h.release();
  }

  /** Takes the held fsyncs whose path is `path` out of the held list. */
  take(path: string): HeldSync[] {
    const taken = this.held.filter((h) => h.path === path);
    for (const t of taken) this.held.splice(this.held.indexOf(t), 1);
    return taken;
  }
}
