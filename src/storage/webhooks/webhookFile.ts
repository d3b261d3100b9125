import { pathExists, unlessMissing, writeFileDurable } from '../fs/durable.js';
import type { FsPromises } from '../fs/fs.js';

/** One try at delivering: when, the receiver's status (null: no answer), and why it failed. */
export interface DeliveryAttempt {
  at: string;
  status: number | null;
  error: string | null;
  ms: number;
}

/** One commit's delivery to one hook, with every attempt at it. */
export interface DeliveryRecord {
  id: string;
  commitId: string;
  status: 'pending' | 'delivered' | 'failed';
  attempts: DeliveryAttempt[];
  /** When the next attempt is due (pending only). */
  nextAttemptAt: string | null;
}

export interface WebhookRecord {
  id: string;
  url: string;
  events: string[];
  prefix: string | null;
  /** The HMAC key. Kept in clear (a signature needs it), beside the repository and never in git. */
  secret: string;
  /** The key that created the hook: the hook sees what this key may read, and stops when it is revoked. */
  createdBy: string;
  createdAt: string;
  /** The last commit the hook is done with: deliveries are made for the commits after it, in order. */
  cursor: string;
  state: 'active' | 'stopped';
  stoppedReason: string | null;
  /** The most recent deliveries, newest first (the first may be the one in progress). */
  deliveries: DeliveryRecord[];
}

interface FileShape {
  knowledgeWebhooks: 1;
  hooks: WebhookRecord[];
}

/**
 * An organization's webhooks and their delivery state, in `knowledge-webhooks.json` inside the bare
 * repository's directory (git ignores it; a clone never carries the secrets). Every change is written
 * whole, durably (temp file, fsync, rename, fsync of the directory), before it is acted on: after a crash
 * the file holds either the state before a change or after it. The queue itself is not stored: it is the
 * commits of main after each hook's cursor, which git keeps durably; so a commit answered 200 is
 * delivered even when the process is killed before it was queued anywhere.
 */
export class WebhookFile {
  readonly path: string;

  constructor(
    private readonly fs: FsPromises,
    gitdir: string,
  ) {
    this.path = `${gitdir}/knowledge-webhooks.json`;
  }

  exists(): Promise<boolean> {
    return pathExists(this.fs, this.path);
  }

  async read(): Promise<WebhookRecord[]> {
    const text = await unlessMissing(this.fs.readFile(this.path, 'utf8'));
    if (text === null) return [];
    const parsed = JSON.parse(text) as Partial<FileShape>;
    if (parsed.knowledgeWebhooks !== 1 || !Array.isArray(parsed.hooks)) throw new Error(`${this.path}: not a webhook file of format 1`);
    return parsed.hooks;
  }

  async write(hooks: readonly WebhookRecord[]): Promise<void> {
    const shape: FileShape = { knowledgeWebhooks: 1, hooks: [...hooks] };
    // Owner-only: the file holds the hooks' signing secrets.
    await writeFileDurable(this.fs, this.path, `${JSON.stringify(shape)}\n`, 0o600);
  }
}
