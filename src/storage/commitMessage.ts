/**
 * Commit messages end with a trailer block that names the item and the action
 * (design.md, storage rule 6): per-item history and the change feed are
 * rebuilt from these, never from `git log -- <path>`. Only the last paragraph
 * is read as trailers, and the store always writes that paragraph itself, so a
 * client's `message` cannot forge one.
 */
export type ItemAction = 'create' | 'update' | 'delete' | 'restore' | 'permissions' | 'purge';

export interface ItemTrailers {
  itemId: string;
  itemPath: string;
  action: ItemAction;
}

export function formatCommitMessage(summary: string, trailers: ItemTrailers): string {
  const body = summary.replace(/\s+$/, '');
  return `${body}\n\nItem-Id: ${trailers.itemId}\nItem-Path: ${trailers.itemPath}\nItem-Action: ${trailers.action}\n`;
}

export function parseTrailers(message: string): ItemTrailers | null {
  const paragraphs = message.trimEnd().split(/\n\s*\n/);
  const last = paragraphs[paragraphs.length - 1] ?? '';
  const fields = new Map<string, string>();
  for (const line of last.split('\n')) {
    const m = /^([A-Za-z-]+): (.*)$/.exec(line);
    if (m) fields.set(m[1] as string, m[2] as string);
  }
  const itemId = fields.get('Item-Id');
  const itemPath = fields.get('Item-Path');
  const action = fields.get('Item-Action') as ItemAction | undefined;
  if (!itemId || !itemPath || !action) return null;
  return { itemId, itemPath, action };
}
