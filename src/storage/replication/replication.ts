import type { Logger } from '../../common/log.js';
import { Slots } from '../../common/slots.js';
import type { FsPromises } from '../fs/fs.js';
import type { GitCli, PushResult } from '../git/gitCli.js';
import type { OrgRepo } from '../repo/orgRepo.js';
import { OrgReplicator, type MirrorStatus } from './orgReplicator.js';
import { remotesOf, type ReplicationSettings } from './remotes.js';

export type { MirrorStatus } from './orgReplicator.js';

/** Replication across organizations, as /metrics sums it up (no label per organization or mirror). */
export interface ReplicationTotals {
  /** Mirrors by state. */
  mirrors: Record<MirrorStatus['state'], number>;
  /** The largest lag of any mirror, in commits and in seconds. */
  maxLagCommits: number;
  maxLagSeconds: number;
}

/**
 * Asynchronous replication of every organization's main to its git mirrors (KNOWLEDGE_REPLICATE): each
 * repository, once open, gets an OrgReplicator; pushes run in the background, `concurrency` at a time.
 */
export class Replication {
  private readonly orgs = new Map<string, Promise<OrgReplicator | null>>();
  private readonly slots: Slots;
  private stopped = false;

  constructor(
    private readonly deps: {
      fs: FsPromises;
      git: GitCli;
      settings: ReplicationSettings;
      logger: Logger;
      /** Told after every push (metrics). */
      pushed?: (outcome: PushResult['outcome'], seconds: number) => void;
    },
  ) {
    this.slots = new Slots(deps.settings.concurrency);
  }

  /** True when `orgId` has at least one mirror. */
  replicates(orgId: string): boolean {
    return remotesOf(this.deps.settings, orgId).length > 0;
  }

  /** Starts replicating an organization's repository that was just opened (nothing when it has no mirror). */
  attach(repo: OrgRepo): Promise<void> {
    const urls = remotesOf(this.deps.settings, repo.orgId);
    if (this.stopped || urls.length === 0 || this.orgs.has(repo.orgId)) return Promise.resolve();
    const { fs, git, settings, logger } = this.deps;
    const pushed = this.deps.pushed ?? (() => undefined);
    const starting = OrgReplicator.start(repo, urls, { fs, git, settings, slots: this.slots, logger, pushed }).catch((err: unknown) => {
      logger.error('could not start replication of an organization', { org: repo.orgId, error: String(err) });
      this.orgs.delete(repo.orgId);
      return null;
    });
    this.orgs.set(repo.orgId, starting);
    return starting.then(() => undefined);
  }

  /** The mirrors of an organization with their lag; empty when it has none (or its repository is not open yet). */
  async status(orgId: string): Promise<MirrorStatus[]> {
    const replicator = await this.orgs.get(orgId);
    return replicator?.status() ?? [];
  }

  /** Every mirror of every open organization, summed up. */
  async totals(): Promise<ReplicationTotals> {
    const totals: ReplicationTotals = { mirrors: { ok: 0, pushing: 0, failing: 0, rejected: 0 }, maxLagCommits: 0, maxLagSeconds: 0 };
    const now = Date.now();
    for (const pending of this.orgs.values()) {
      for (const mirror of (await pending)?.status(now) ?? []) {
        totals.mirrors[mirror.state]++;
        totals.maxLagCommits = Math.max(totals.maxLagCommits, mirror.lagCommits);
        totals.maxLagSeconds = Math.max(totals.maxLagSeconds, mirror.lagSeconds);
      }
    }
    return totals;
  }

  /** Stops every worker (kills pushes under way: each mirror keeps what it had, and the next start pushes again). */
  async stop(): Promise<void> {
    this.stopped = true;
    const replicators = await Promise.all(this.orgs.values());
    await Promise.all(replicators.map((r) => r?.stop()));
    this.orgs.clear();
  }
}
