import { systemClock, type Clock } from '../common/clock.js';
import type { FolderRule } from '../storage/repo/itemRecord.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import { requestedRequirement, requireRole } from './access.js';
import { authorOf } from './items.js';
import type { Actor } from './keys.js';
import { validateFolderPrefix } from './paths.js';
import { INHERIT, READ_REQUIREMENTS, WRITE_REQUIREMENTS } from './permissions.js';
import { inScope, requireInScope } from './scopes.js';

/** A folder's rule as the API shows it: `inherit` where it sets nothing. */
export interface FolderRuleView {
  folder: string;
  requiredReadPermission: string;
  requiredWritePermission: string;
  updatedAt: string | null;
}

/**
 * A folder named in a request. A scoped admin manages the rules of its scope folders and the
 * folders below them only: a rule above a scope would reach items outside it. Decided on the
 * folder's name alone.
 */
function validateFolder(actor: Actor, folder: string): string {
  // `docs/` as the rest of the API writes a folder (prefix=, scopes), or `docs`: the same folder.
  const prefix = validateFolderPrefix(folder.endsWith('/') ? folder : `${folder}/`);
  requireInScope(actor, prefix);
  return prefix.slice(0, -1);
}

function present(folder: string, rule: FolderRule | undefined): FolderRuleView {
  return {
    folder,
    requiredReadPermission: rule?.requiredReadPermission ?? INHERIT,
    requiredWritePermission: rule?.requiredWritePermission ?? INHERIT,
    updatedAt: rule?.updatedAt ?? null,
  };
}

export function getFolderRule(args: { repo: OrgRepo; actor: Actor; folder: string }): FolderRuleView {
  requireRole(args.actor, 'knowledge:admin');
  const folder = validateFolder(args.actor, args.folder);
  return present(folder, args.repo.folderRule(folder));
}

export function listFolderRules(args: { repo: OrgRepo; actor: Actor }): FolderRuleView[] {
  requireRole(args.actor, 'knowledge:admin');
  return args.repo
    .folderRules()
    .filter((r) => inScope(args.actor, `${r.folder}/`))
    .map((r) => present(r.folder, r));
}

/**
 * Sets what `inherit` resolves to under a folder: one commit, in effect for
 * lists and gets at once. A field left out keeps its value; `inherit` clears it;
 * a rule that sets nothing is removed.
 */
export async function setFolderRule(args: {
  repo: OrgRepo;
  actor: Actor;
  folder: string;
  requiredReadPermission?: string;
  requiredWritePermission?: string;
  clock?: Clock;
}): Promise<FolderRuleView> {
  const { repo, actor, clock = systemClock } = args;
  requireRole(actor, 'knowledge:admin');
  const folder = validateFolder(actor, args.folder);
  const read = requestedRequirement('requiredReadPermission', args.requiredReadPermission, READ_REQUIREMENTS);
  const write = requestedRequirement('requiredWritePermission', args.requiredWritePermission, WRITE_REQUIREMENTS);
  let result: FolderRule | undefined;
  await repo.write((v) => {
    const current = v.folderRule(folder);
    const nextRead = read ?? current?.requiredReadPermission ?? INHERIT;
    const nextWrite = write ?? current?.requiredWritePermission ?? INHERIT;
    if (nextRead === (current?.requiredReadPermission ?? INHERIT) && nextWrite === (current?.requiredWritePermission ?? INHERIT)) {
      result = current;
      return null;
    }
    const when = clock();
    const empty = nextRead === INHERIT && nextWrite === INHERIT;
    const rule = empty ? null : { folder, requiredReadPermission: nextRead, requiredWritePermission: nextWrite, updatedAt: when.toISOString(), updatedBy: actor.keyId };
    result = rule ?? undefined;
    const summary = empty ? `Remove the rule of folder ${folder}` : `Set the rule of folder ${folder}`;
    return { mutation: 'folderRule', folder, rule, summary, author: authorOf(actor), when };
  });
  return present(folder, result);
}
