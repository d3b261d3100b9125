import type { IndexEntry, IndexView } from '../storage/repo/itemIndex.js';
import type { ItemRecord } from '../storage/repo/itemRecord.js';
import { Forbidden, InvalidInput } from './errors.js';
import type { Actor } from './keys.js';
import { inScope } from './scopes.js';
import { can, INHERIT, PERMISSIONS, resolveRequirement, type FolderRuleLookup, type Permission, type PermissionRequirement } from './permissions.js';

/** Where folder rules come from: the repository, or a batch's view of it. */
export type RuleSource = Pick<IndexView, 'folderRule'>;

export function rulesOf(source: RuleSource): FolderRuleLookup {
  return (folder, kind) => {
    const rule = source.folderRule(folder);
    const value = kind === 'read' ? rule?.requiredReadPermission : rule?.requiredWritePermission;
    return value !== undefined && value !== INHERIT && (PERMISSIONS as readonly string[]).includes(value) ? (value as Permission) : undefined;
  };
}

export function requireRole(actor: Actor, permission: Permission): void {
  if (!can(actor.role, permission)) throw new Forbidden({ permission });
}

/** The permission an item needs for reading or writing, `inherit` resolved (nearest folder rule, else the organization default). */
export function requirement(record: ItemRecord, kind: 'read' | 'write', rules: RuleSource): Permission {
  const value = kind === 'read' ? record.requiredReadPermission : record.requiredWritePermission;
  return resolveRequirement({ requirement: value as PermissionRequirement, path: record.path, kind, folderRule: rulesOf(rules) });
}

/**
 * The key may see this item's record, history and trash entry (live or not): its role holds the
 * item's read requirement, and the item lies inside the key's scopes. THE read decision: every
 * route that shows an item (list, get, search's rows, history, diff, changes, trash, MCP) asks
 * here, so a route added later inherits both the role's and the scopes' limits by calling it.
 */
export function canSee(actor: Actor, record: ItemRecord, rules: RuleSource): boolean {
  return inScope(actor, record.path) && can(actor.role, requirement(record, 'read', rules));
}

/** The key sees every item there is: an admin without scopes (a shortcut past per-item checks). */
export function seesEverything(actor: Actor): boolean {
  return actor.scopes === undefined && can(actor.role, 'knowledge:admin');
}

/** A live item the role may read; anything else is absent for this role. */
export function readable(actor: Actor, entry: IndexEntry | undefined, rules: RuleSource): entry is IndexEntry {
  return entry !== undefined && entry.record.deletedAt === null && canSee(actor, entry.record, rules);
}

/**
 * A requirement given in a request (an item's or a folder rule's), checked against the values
 * that field allows; absent stays absent. The message names the field and what it accepts.
 */
export function requestedRequirement(field: string, value: string | undefined, allowed: readonly PermissionRequirement[]): string | undefined {
  if (value !== undefined && !(allowed as readonly string[]).includes(value)) {
    throw new InvalidInput({ reason: `${field} must be one of ${allowed.join(', ')}` });
  }
  return value;
}
