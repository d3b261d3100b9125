import { INHERIT, PERMISSIONS, resolveRequirement, type Permission } from '../../domain/permissions.js';
import type { FolderRule } from './types.js';

/**
 * What an item's requirement resolves to, and why. The resolution itself is the
 * server's own `resolveRequirement`, so the page cannot drift from what the server
 * enforces; the dashboard only adds which folder rule (if any) decided it, so that
 * whoever reads it knows where to change it. Pure: no DOM.
 */
export function effectiveRequirement(args: {
  requirement: string | null;
  path: string;
  kind: 'read' | 'write';
  rules: FolderRule[];
}): { permission: Permission; from: string; folder?: string } {
  const { path, kind, rules } = args;
  // The API sends plain strings; anything that is not a permission (`inherit`, or no write requirement) inherits.
  const own = asPermission(args.requirement);
  const byFolder = new Map(rules.map((r) => [r.folder, r]));
  let decidedBy: string | undefined;
  const permission = resolveRequirement({
    requirement: own ?? INHERIT,
    path,
    kind,
    folderRule: (folder) => {
      const rule = byFolder.get(folder);
      const value = asPermission(kind === 'read' ? rule?.requiredReadPermission : rule?.requiredWritePermission);
      if (value) decidedBy = folder;
      return value;
    },
  });
  if (own) return { permission, from: 'set on the item' };
  if (decidedBy !== undefined) return { permission, from: `folder rule of ${decidedBy}/`, folder: decidedBy };
  return { permission, from: 'organization default' };
}

const asPermission = (value: string | null | undefined): Permission | undefined => PERMISSIONS.find((p) => p === value);
