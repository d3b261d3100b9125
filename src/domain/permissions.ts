/**
 * Permissions are data: a rising order of access, a
 * role -> permissions table, and one `can(role, permission)`.
 * The order: knowledge:read < knowledge:write < knowledge:admin.
 */
export const PERMISSIONS = ['knowledge:read', 'knowledge:write', 'knowledge:admin'] as const;
export type Permission = (typeof PERMISSIONS)[number];

export const ROLES = {
  reader: ['knowledge:read'],
  writer: ['knowledge:read', 'knowledge:write'],
  admin: ['knowledge:read', 'knowledge:write', 'knowledge:admin'],
} as const satisfies Record<string, readonly Permission[]>;
export type Role = keyof typeof ROLES;

export const INHERIT = 'inherit';
/** What an item stores: a permission name, or `inherit`. */
export type PermissionRequirement = Permission | typeof INHERIT;

/** Values accepted for each requirement field (a write requirement below write would mean nothing). */
export const READ_REQUIREMENTS: readonly PermissionRequirement[] = [INHERIT, ...PERMISSIONS];
export const WRITE_REQUIREMENTS: readonly PermissionRequirement[] = [INHERIT, 'knowledge:write', 'knowledge:admin'];

/** Organization defaults that `inherit` resolves to when no folder rule applies. */
export const ORG_DEFAULTS = { read: 'knowledge:read', write: 'knowledge:write' } as const satisfies Record<
  'read' | 'write',
  Permission
>;

export function isRole(value: string): value is Role {
  return Object.hasOwn(ROLES, value);
}

export function can(role: Role, permission: Permission): boolean {
  return (ROLES[role] as readonly Permission[]).includes(permission);
}

/** The higher of two permissions in the order of access. */
export function highest(a: Permission, b: Permission): Permission {
  return PERMISSIONS.indexOf(a) >= PERMISSIONS.indexOf(b) ? a : b;
}

/**
 * Looks up the folder rule that `inherit` resolves to. Folder rules arrive with
 * the admin API; until an organization has any, every lookup is undefined and
 * `inherit` falls through to the organization default.
 */
export type FolderRuleLookup = (folder: string, kind: 'read' | 'write') => Permission | undefined;

export const NO_FOLDER_RULES: FolderRuleLookup = () => undefined;

/** Resolves a requirement: the item's own value, else the nearest ancestor folder rule, else the default. */
export function resolveRequirement(args: {
  requirement: PermissionRequirement;
  path: string;
  kind: 'read' | 'write';
  folderRule?: FolderRuleLookup;
}): Permission {
  const { requirement, path, kind, folderRule = NO_FOLDER_RULES } = args;
  if (requirement !== INHERIT) return requirement;
  let folder = path;
  for (let slash = folder.lastIndexOf('/'); slash > 0; slash = folder.lastIndexOf('/')) {
    folder = folder.slice(0, slash);
    const rule = folderRule(folder, kind);
    if (rule) return rule;
  }
  return ORG_DEFAULTS[kind];
}
