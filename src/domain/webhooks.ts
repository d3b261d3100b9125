import { randomBytes, randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/log.js';
import type { FsPromises } from '../storage/fs/fs.js';
import type { KeyStore } from '../storage/keys/keyStore.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import type { OrgStore } from '../storage/repo/orgStore.js';
import { WebhookFile, type DeliveryRecord, type WebhookRecord } from '../storage/webhooks/webhookFile.js';
import { requireRole } from './access.js';
import { InvalidInput, WebhookNotFound } from './errors.js';
import type { EventFeed } from './events.js';
import type { Actor } from './keys.js';
import { validateFolderPrefix } from './paths.js';
import { isPrivateAddress } from './privateAddress.js';
import { CHANGE_KINDS, type WebhookSender } from './webhookDelivery.js';
import { HookWorker } from './webhookWorker.js';

/** A hook as GET /webhooks shows it: never its secret. */
export type WebhookView = Omit<WebhookRecord, 'secret' | 'deliveries'> & { lastDelivery: DeliveryRecord | null };

export interface WebhookSettings {
  /**
   * Deliver to loopback, private, link-local and other non-public addresses (KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE=on).
   * Off by default: an admin key must not turn the server into a probe of the network it sits in.
   */
  allowPrivate: boolean;
  /** The first retry's delay; each next one doubles, up to an hour, for a day (KNOWLEDGE_WEBHOOK_RETRY_BASE_MS). */
  retryBaseMs: number;
  /** How long a receiver has to answer one delivery (KNOWLEDGE_WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
}

/** Most hooks one organization may have. */
const MAX_HOOKS = 50;
const MAX_URL = 2048;

/** One organization's hooks, the file they live in, and a worker per active hook. */
interface OrgHooks {
  repo: OrgRepo;
  file: WebhookFile;
  hooks: WebhookRecord[];
  workers: Map<string, HookWorker>;
  /** Writes of the file, one after another. */
  writing: Promise<void>;
  /** Lets go of the organization's keep (OrgStore.keepOpen), taken while it has hooks; null while it has none. */
  letGo: (() => void) | null;
}

/**
 * The webhooks of every organization (contract §10), admin only: created, listed, deleted, and delivered
 * by one worker per hook (webhookWorker.ts). The service owns each organization's webhook file: every
 * change goes through it, so the API and the workers never write over each other.
 */
export class Webhooks {
  /**
   * Each organization's hooks, loaded once per opening of its repository (see `of`). Weakly: a repository closed
   * for being idle is not kept in memory for its hooks' sake (only one without hooks can be closed; its next
   * opening is a new repository, whose hooks are loaded from the file again).
   */
  private readonly loaded = new WeakMap<OrgRepo, Promise<OrgHooks>>();
  /** The organizations whose hooks have had workers, for `stop`. */
  private readonly working = new Set<OrgHooks>();
  private stopping = false;

  constructor(
    private readonly deps: {
      orgs: OrgStore;
      keys: KeyStore;
      feed: EventFeed;
      send: WebhookSender;
      fs: FsPromises;
      settings: WebhookSettings;
      clock: Clock;
      logger: Logger;
    },
  ) {}

  /** Resumes the deliveries of every organization that has hooks (what was queued before a stop or a crash). */
  async start(): Promise<void> {
    for (const orgId of await this.deps.orgs.list()) {
      try {
        if (!(await new WebhookFile(this.deps.fs, this.deps.orgs.gitdirOf(orgId)).exists())) continue;
        // Held while its hooks load: one that has any is kept open from then on (see `of`).
        const lease = await this.deps.orgs.hold(orgId);
        if (!lease) continue;
        try {
          await this.of(lease.repo);
        } finally {
          lease.release();
        }
      } catch (err) {
        // One organization's unreadable webhook file must not keep the server (and every other one) down.
        this.deps.logger.error('could not resume webhooks', { org: orgId, error: String(err) });
      }
    }
  }

  async create(args: { repo: OrgRepo; actor: Actor; input: { url: string; events?: string[]; prefix?: string } }): Promise<{ webhook: WebhookView; secret: string }> {
    requireRole(args.actor, 'knowledge:admin');
    const input = this.validate(args.input);
    const org = await this.of(args.repo);
    if (org.hooks.length >= MAX_HOOKS) throw new InvalidInput({ reason: `An organization may have at most ${MAX_HOOKS} webhooks` });
    const secret = `whsec_${randomBytes(32).toString('base64url')}`;
    const hook: WebhookRecord = {
      id: `wh_${randomUUID().replace(/-/g, '').slice(0, 16)}`,
      ...input,
      secret,
      createdBy: args.actor.keyId,
      createdAt: this.deps.clock().toISOString(),
      // From now on: a hook is told of the commits after its creation.
      cursor: args.repo.headCommit as string,
      state: 'active',
      stoppedReason: null,
      deliveries: [],
    };
    // Its workers hold the repository from now on: it is not to be closed for being idle.
    org.letGo ??= this.deps.orgs.keepOpen(args.repo.orgId);
    org.hooks.push(hook);
    try {
      await this.persist(org);
    } catch (err) {
      // This hook, wherever it is now: others may have been made or deleted meanwhile. The keep stays: another
      // change's write may have put this hook in the file, which a reopening would then find.
      org.hooks.splice(org.hooks.indexOf(hook), 1);
      throw err;
    }
    this.startWorker(org, hook);
    return { webhook: view(hook), secret };
  }

  async list(args: { repo: OrgRepo; actor: Actor }): Promise<WebhookView[]> {
    requireRole(args.actor, 'knowledge:admin');
    return (await this.of(args.repo)).hooks.filter((h) => manages(args.actor, h)).map(view);
  }

  async remove(args: { repo: OrgRepo; actor: Actor; id: string }): Promise<void> {
    requireRole(args.actor, 'knowledge:admin');
    const org = await this.of(args.repo);
    const hook = org.hooks.find((h) => h.id === args.id && manages(args.actor, h));
    if (!hook) throw new WebhookNotFound({ webhookId: args.id });
    await org.workers.get(args.id)?.stop();
    org.workers.delete(args.id);
    // Where it is now (hooks made or deleted while its worker stopped moved it), unless a remove beside this one took it.
    const at = org.hooks.indexOf(hook);
    if (at >= 0) org.hooks.splice(at, 1);
    await this.persist(org);
    // Only once the file says so: a close, and the reload at the next opening, must not find the hook again.
    this.letGoIfNone(org);
  }

  async deliveries(args: { repo: OrgRepo; actor: Actor; id: string }): Promise<DeliveryRecord[]> {
    requireRole(args.actor, 'knowledge:admin');
    const hook = (await this.of(args.repo)).hooks.find((h) => h.id === args.id && manages(args.actor, h));
    if (!hook) throw new WebhookNotFound({ webhookId: args.id });
    return hook.deliveries;
  }

  /** Stops every worker (a delivery in flight finishes or times out); what is left resumes at the next start. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const org of this.working) await Promise.all([...org.workers.values()].map((w) => w.stop()));
  }

  private validate(input: { url: string; events?: string[]; prefix?: string }): { url: string; events: string[]; prefix: string | null } {
    let url: URL;
    try {
      url = new URL(input.url);
    } catch {
      throw new InvalidInput({ reason: 'url must be an absolute http or https URL' });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidInput({ reason: 'url must be an absolute http or https URL' });
    if (input.url.length > MAX_URL) throw new InvalidInput({ reason: `url must be at most ${MAX_URL} characters` });
    if (url.username || url.password) throw new InvalidInput({ reason: 'url must not carry credentials: verify deliveries by their signature' });
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (!this.deps.settings.allowPrivate && (host === 'localhost' || host.endsWith('.localhost') || (isIP(host) !== 0 && isPrivateAddress(host)))) {
      throw new InvalidInput({ reason: 'url points to a private address; set KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE=on to allow it' });
    }
    const events = input.events ?? [...CHANGE_KINDS];
    const unknown = events.find((e) => !(CHANGE_KINDS as readonly string[]).includes(e));
    if (unknown !== undefined || events.length === 0 || new Set(events).size !== events.length) {
      throw new InvalidInput({ reason: `events must list some of ${CHANGE_KINDS.join(', ')}, each once` });
    }
    return { url: url.href, events, prefix: input.prefix === undefined ? null : validateFolderPrefix(input.prefix) };
  }

  /**
   * The organization's hooks, loaded once per opening of its repository. While it has hooks it is kept open
   * (their workers hold the repository), so every user of the organization meets the same hooks: a repository
   * is closed only when nobody holds it. One with none may be closed for being idle and opened again; its hooks
   * are then loaded again, for the repository it has now.
   */
  private of(repo: OrgRepo): Promise<OrgHooks> {
    const cached = this.loaded.get(repo);
    if (cached) return cached;
    const hooks = this.load(repo);
    this.loaded.set(repo, hooks);
    // A failed load (an unreadable file) is tried again by the next use.
    hooks.catch(() => {
      if (this.loaded.get(repo) === hooks) this.loaded.delete(repo);
    });
    return hooks;
  }

  private async load(repo: OrgRepo): Promise<OrgHooks> {
    const file = new WebhookFile(this.deps.fs, repo.gitdir);
    const org: OrgHooks = { repo, file, hooks: await file.read(), workers: new Map(), writing: Promise.resolve(), letGo: null };
    if (org.hooks.length > 0) org.letGo = this.deps.orgs.keepOpen(repo.orgId);
    org.hooks.forEach((hook) => this.startWorker(org, hook));
    // Every published batch may hold a commit for a hook.
    this.deps.feed.watch(repo, () => org.workers.forEach((w) => w.wake()));
    return org;
  }

  /** An organization whose last hook is deleted (and written so) is no longer kept open for its hooks. */
  private letGoIfNone(org: OrgHooks): void {
    if (org.hooks.length > 0 || !org.letGo) return;
    org.letGo();
    org.letGo = null;
    // Nothing left to stop: what it holds (its repository, once closed) is not kept for `stop`'s sake.
    this.working.delete(org);
  }

  private startWorker(org: OrgHooks, hook: WebhookRecord): void {
    if (hook.state !== 'active' || this.stopping) return;
    this.working.add(org);
    const { keys, feed, send, settings, clock, logger } = this.deps;
    // A state that could not be written stays in memory and is written with the next change; the delivery goes on.
    const persist = (): Promise<void> => this.persist(org).catch((err: unknown) => logger.error('could not write webhook state', { org: org.repo.orgId, error: String(err) }));
    org.workers.set(hook.id, new HookWorker(hook, { repo: org.repo, keys, feed, send, settings, clock, logger, persist }));
  }

  /** Writes the organization's hooks as they are now, after any write already under way. */
  private persist(org: OrgHooks): Promise<void> {
    const write = org.writing.then(() => org.file.write(org.hooks));
    org.writing = write.catch(() => undefined);
    return write;
  }
}

/**
 * A scoped admin manages only the hooks it created: another's URL and folder could name what lies outside its
 * scopes, and deleting it would reach the whole organization. An admin without scopes manages them all.
 */
function manages(actor: Actor, hook: WebhookRecord): boolean {
  return actor.scopes === undefined || hook.createdBy === actor.keyId;
}

function view(hook: WebhookRecord): WebhookView {
  const { secret: _secret, deliveries, ...rest } = hook;
  return { ...rest, lastDelivery: deliveries[0] ?? null };
}
