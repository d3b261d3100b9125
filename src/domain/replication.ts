import type { MirrorStatus, Replication } from '../storage/replication/replication.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { requireRole } from './access.js';
import type { Actor } from './keys.js';
import { requireUnscoped } from './scopes.js';

/** One mirror as GET /replication shows it. */
export interface MirrorView {
  url: string;
  state: MirrorStatus['state'];
  pushedCommit: string | null;
  pushedAt: string | null;
  lagCommits: number;
  lagSeconds: number;
  failures: number;
  lastError: string | null;
  nextRetryAt: string | null;
}

/**
 * Where the organization's mirrors are: admin keys without scopes only (a mirror holds every folder, and
 * its URL and errors describe the deployment). An organization without mirrors has an empty list.
 */
export async function replicationStatus(args: { replication: Replication | undefined; repo: OrgRepo; actor: Actor }): Promise<{ head: string | null; mirrors: MirrorView[] }> {
  requireRole(args.actor, 'knowledge:admin');
  requireUnscoped(args.actor, 'see replication (a mirror holds every folder)');
  const mirrors = (await args.replication?.status(args.repo.orgId)) ?? [];
  return {
    head: args.repo.headCommit,
    mirrors: mirrors.map((m) => ({
      url: m.url,
      state: m.state,
      pushedCommit: m.pushedCommit,
      pushedAt: m.pushedAt?.toISOString() ?? null,
      lagCommits: m.lagCommits,
      lagSeconds: Math.round(m.lagSeconds * 1000) / 1000,
      failures: m.failures,
      lastError: m.lastError,
      nextRetryAt: m.nextRetryAt?.toISOString() ?? null,
    })),
  };
}
