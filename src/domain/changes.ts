import type { OrgRepo } from '../storage/orgRepo.js';
import { canSee, requireRole } from './access.js';
import { requireOwnCommit } from './history.js';
import type { Actor } from './keys.js';

/** One item's net change since the given commit. */
export interface ChangeView {
  id: string;
  path: string;
  change: 'created' | 'updated' | 'deleted';
  /** The last commit that changed the item. */
  commitId: string;
  timestamp: string;
}

/**
 * `GET /changes?since=<commit>` (contract §4): what an agent must apply to a copy
 * made at `since` to match `head`. One entry per item, in the order of their last
 * change; items the role may not see are left out. A purged item's record is gone
 * from the tree, so the role is checked against the record it had just before the purge.
 */
export async function changesSince(args: {
  repo: OrgRepo;
  actor: Actor;
  since: string;
}): Promise<{ head: string | null; changes: ChangeView[] }> {
  const { repo, actor, since } = args;
  requireRole(actor, 'knowledge:read');
  const after = repo.history.after(requireOwnCommit(repo, since, 'since')) ?? [];
  const byItem = new Map<string, { first: string; last: (typeof after)[number] }>();
  for (const entry of after) {
    if (!entry.item) continue;
    const seen = byItem.get(entry.item.id);
    byItem.delete(entry.item.id); // re-inserted last: the map stays in order of last change
    byItem.set(entry.item.id, { first: seen?.first ?? entry.item.action, last: entry });
  }
  const changes: ChangeView[] = [];
  for (const [id, { first, last }] of byItem) {
    const path = last.item?.path as string;
    const now = repo.get(path);
    const live = now?.record.id === id ? now.record : undefined;
    const record = live ?? (last.parent ? (await repo.readAt(last.parent, path))?.record : undefined);
    if (!record || record.id !== id || !canSee(actor, record, repo)) continue;
    // A copy made at `since` lacks items created, or restored from the trash, after it.
    const change = !live || live.deletedAt !== null ? 'deleted' : first === 'create' || first === 'restore' ? 'created' : 'updated';
    changes.push({ id, path, change, commitId: last.commitId, timestamp: new Date(last.timestamp * 1000).toISOString() });
  }
  return { head: repo.headCommit, changes };
}
