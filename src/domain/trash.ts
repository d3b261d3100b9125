import { systemClock, type Clock } from '../common/clock.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { canSee, requireRole } from './access.js';
import { ItemNotFound } from './errors.js';
import { authorOf } from './items.js';
import { view, type ItemView } from './itemReads.js';
import type { Actor } from './keys.js';
import { validatePath } from './paths.js';

/**
 * The trash (admin only): soft-deleted items, restored with the
 * same id and history, or purged from the tree (git history keeps them).
 */
export function listTrash(args: { repo: OrgRepo; actor: Actor }): Promise<ItemView[]> {
  requireRole(args.actor, 'knowledge:admin');
  // canSee: a scoped admin's trash holds only what was deleted inside its scopes.
  const trashed = [...args.repo.entries()].filter((e) => e.record.deletedAt !== null && canSee(args.actor, e.record, args.repo));
  return Promise.all(trashed.map((e) => view(args.repo, e, false)));
}

function trashedEntry(repo: OrgRepo, actor: Actor, rawPath: string) {
  requireRole(actor, 'knowledge:admin');
  const path = validatePath(rawPath);
  const entry = repo.get(path);
  if (!entry || entry.record.deletedAt === null || !canSee(actor, entry.record, repo)) throw new ItemNotFound({ path });
  return { path, entry };
}

export async function restoreItem(args: { repo: OrgRepo; actor: Actor; path: string; clock?: Clock }): Promise<ItemView> {
  const { repo, actor, clock = systemClock } = args;
  trashedEntry(repo, actor, args.path);
  const result = await repo.write((v) => {
    // Decided again inside the write queue: a concurrent restore or purge may have come first.
    const current = v.get(args.path);
    if (!current || current.record.deletedAt === null || !canSee(actor, current.record, v)) throw new ItemNotFound({ path: args.path });
    const when = clock();
    const record = { ...current.record, deletedAt: null, deletedBy: null, updatedAt: when.toISOString(), updatedBy: actor.keyId };
    return { mutation: 'restore', path: args.path, record, action: 'restore', summary: `Restore ${args.path}`, author: authorOf(actor), when };
  });
  if (!result.entry) throw new Error('restore made no commit');
  return view(repo, result.entry, true);
}

export async function purgeItem(args: { repo: OrgRepo; actor: Actor; path: string; clock?: Clock }): Promise<void> {
  const { repo, actor, clock = systemClock } = args;
  const { path } = trashedEntry(repo, actor, args.path);
  await repo.write((v) => {
    const current = v.get(path);
    if (!current || current.record.deletedAt === null || !canSee(actor, current.record, v)) throw new ItemNotFound({ path });
    return { mutation: 'purge', path, record: current.record, action: 'purge', summary: `Purge ${path}`, author: authorOf(actor), when: clock() };
  });
}
