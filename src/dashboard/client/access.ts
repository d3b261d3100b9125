import { ORG_DEFAULTS, type FolderRule } from './types.js';
import { foldersAbove } from './tree.js';

/**
 * What an item's requirement resolves to, as the server resolves it: its own value,
 * else the nearest ancestor folder's rule for that kind, else the organization default.
 * Pure: no DOM.
 */
export function effectiveRequirement(args: {
  requirement: string | null;
  path: string;
  kind: 'read' | 'write';
  rules: FolderRule[];
}): { permission: string; from: string; folder?: string } {
  const { requirement, path, kind, rules } = args;
  if (requirement && requirement !== 'inherit') return { permission: requirement, from: 'set on the item' };
  const byFolder = new Map(rules.map((r) => [r.folder, r]));
  for (const folder of foldersAbove(path).reverse()) {
    const rule = byFolder.get(folder);
    const value = kind === 'read' ? rule?.requiredReadPermission : rule?.requiredWritePermission;
    if (value && value !== 'inherit') return { permission: value, from: `folder rule of ${folder}/`, folder };
  }
  return { permission: ORG_DEFAULTS[kind], from: 'organization default' };
}
