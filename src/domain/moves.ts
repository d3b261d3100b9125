import { systemClock, type Clock } from '../common/clock.js';
import { versionTag } from '../storage/repo/itemIndex.js';
import type { ItemRecord } from '../storage/repo/itemRecord.js';
import type { ItemIntent, OrgRepo, RepoView } from '../storage/repo/orgRepo.js';
import { canSee, requireRole } from './access.js';
import { InvalidInput, ItemInTrash, ItemNotFound, PreconditionFailed } from './errors.js';
import { authorOf, checkPathFree, requireChangeRights, tagMatches, validateMessage, type TagCondition } from './items.js';
import { view, type ItemView } from './itemReads.js';
import type { Actor } from './keys.js';
import { validatePath } from './paths.js';

/**
 * Moves a live item from one path to another in one commit: the same id, `createdAt` and history
 * (the move is a version with action `move`); the content blob is unchanged, so git sees a rename.
 *
 * The role needs the right to change the item where it is and where it would be (folder rules at
 * `to` included), as a PUT creating it at `to` would: nobody moves an item to where they could
 * neither see nor change it. `to` must be free the way a PUT's new path must be, judged before
 * the move (so an item cannot move under itself, nor onto the folder that holds only itself).
 */
export async function moveItem(args: {
  repo: OrgRepo;
  actor: Actor;
  from: string;
  to: string;
  ifMatch?: TagCondition;
  message?: string;
  clock?: Clock;
}): Promise<{ item: ItemView; commitId: string }> {
  const { repo, actor, clock = systemClock } = args;
  const move = checkMove(actor, args);
  const result = await repo.write((v) => planMove(v, actor, move, clock()));
  if (!result.entry || !result.commitId) throw new Error('move made no commit');
  return { item: await view(repo, result.entry, true), commitId: result.commitId };
}

/** A move whose paths and message passed their checks. */
export interface CheckedMove {
  from: string;
  to: string;
  ifMatch?: TagCondition;
  message?: string;
}

/** The checks of a move that need no repository state (the same for POST /move, MCP and each move of POST /commits). */
export function checkMove(actor: Actor, args: { from: string; to: string; ifMatch?: TagCondition; message?: string }): CheckedMove {
  requireRole(actor, 'knowledge:write');
  const from = validatePath(args.from);
  const to = validatePath(args.to);
  if (from === to) throw new InvalidInput({ reason: 'from and to are the same path: nothing to move' });
  const message = args.message === undefined ? undefined : validateMessage(args.message);
  return { from, to, ifMatch: args.ifMatch, message };
}

/** Decides a checked move against `v`: the intent, or the move's refusal. */
export function planMove(v: RepoView, actor: Actor, move: CheckedMove, when: Date): ItemIntent {
  const { from, to, ifMatch, message } = move;
  const current = v.get(from);
  // An item the role may not read is absent for it, live or in the trash.
  if (!current || !canSee(actor, current.record, v)) throw new ItemNotFound({ path: from });
  if (current.record.deletedAt !== null) throw new ItemInTrash({ path: from });
  requireChangeRights(actor, current.record, v);
  if (ifMatch !== undefined && !tagMatches(ifMatch, versionTag(current))) throw new PreconditionFailed({ path: from, reason: 'changed' });
  checkPathFree(v, actor, to);
  const record: ItemRecord = { ...current.record, path: to, updatedAt: when.toISOString(), updatedBy: actor.keyId };
  requireChangeRights(actor, record, v);
  return { mutation: 'move', from, path: to, record, action: 'move', summary: message ?? `Move ${from} to ${to}`, author: authorOf(actor), when };
}
