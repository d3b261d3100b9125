/**
 * Commit messages end with a trailer block that names the item and the action
 * (`Item-Id:` and the like): per-item history and the change feed are
 * rebuilt from these, never from `git log -- <path>`. Only the last paragraph
 * is read as trailers, and the store always writes that paragraph itself, so a
 * client's `message` cannot forge one.
 */
export type ItemAction = 'create' | 'update' | 'delete' | 'restore' | 'permissions' | 'purge' | 'move';

export interface ItemTrailers {
  itemId: string;
  /** Where the item is after the commit. */
  itemPath: string;
  action: ItemAction;
  /** For a move: where the item was before it (history reads older versions there, the change feed removes it). */
  fromPath?: string;
}

export function formatCommitMessage(summary: string, trailers: ItemTrailers): string {
  return withTrailers(summary, {
    'Item-Id': trailers.itemId,
    'Item-Path': trailers.itemPath,
    'Item-Action': trailers.action,
    ...(trailers.fromPath === undefined ? {} : { 'Item-From-Path': trailers.fromPath }),
  });
}

/** A folder rule change names the folder instead of an item. */
export function formatFolderCommitMessage(summary: string, folder: string): string {
  return withTrailers(summary, { 'Folder-Path': folder, 'Folder-Action': 'rule' });
}

function withTrailers(summary: string, trailers: Record<string, string>): string {
  const lines = Object.entries(trailers).map(([k, v]) => `${k}: ${v}`);
  return `${summary.replace(/\s+$/, '')}\n\n${lines.join('\n')}\n`;
}

function trailerBlock(message: string): { body: string; fields: Map<string, string> } {
  const trimmed = message.trimEnd();
  const cut = trimmed.search(/\n\s*\n(?![\s\S]*\n\s*\n)/);
  const last = cut === -1 ? trimmed : trimmed.slice(cut).trim();
  const fields = new Map<string, string>();
  for (const line of last.split('\n')) {
    const m = /^([A-Za-z-]+): (.*)$/.exec(line);
    if (m) fields.set(m[1] as string, m[2] as string);
  }
  const ours = fields.has('Item-Id') || fields.has('Folder-Path');
  return { body: ours && cut !== -1 ? trimmed.slice(0, cut) : trimmed, fields };
}

/** The message as its author wrote it: without the store's trailer block. */
export function messageBody(message: string): string {
  return trailerBlock(message).body;
}

export function parseTrailers(message: string): ItemTrailers | null {
  const { fields } = trailerBlock(message);
  const itemId = fields.get('Item-Id');
  const itemPath = fields.get('Item-Path');
  const action = fields.get('Item-Action') as ItemAction | undefined;
  if (!itemId || !itemPath || !action) return null;
  const fromPath = fields.get('Item-From-Path');
  return { itemId, itemPath, action, ...(fromPath ? { fromPath } : {}) };
}
