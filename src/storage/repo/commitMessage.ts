/**
 * Commit messages end with a trailer block that names the item and the action
 * (`Item-Id:` and the like): per-item history and the change feed are
 * rebuilt from these, never from `git log -- <path>`. Only the last paragraph
 * is read as trailers, and the store always writes that paragraph itself, so a
 * client's `message` cannot forge one.
 *
 * A commit of several items (`POST /commits`) repeats the group in that one
 * paragraph: each `Item-Id:` line starts the next item's fields, so `git log`
 * reads as a list and a message with one group (every commit before) parses as
 * it always did.
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

export function formatCommitMessage(summary: string, trailers: ItemTrailers | readonly ItemTrailers[]): string {
  const groups: readonly ItemTrailers[] = Array.isArray(trailers) ? trailers : [trailers as ItemTrailers];
  const lines: Array<[string, string]> = groups.flatMap((t): Array<[string, string]> => [
    ['Item-Id', t.itemId],
    ['Item-Path', t.itemPath],
    ['Item-Action', t.action],
    ...(t.fromPath === undefined ? [] : [['Item-From-Path', t.fromPath] as [string, string]]),
  ]);
  return withTrailers(summary, lines);
}

/** A folder rule change names the folder instead of an item. */
export function formatFolderCommitMessage(summary: string, folder: string): string {
  return withTrailers(summary, [
    ['Folder-Path', folder],
    ['Folder-Action', 'rule'],
  ]);
}

function withTrailers(summary: string, trailers: ReadonlyArray<readonly [string, string]>): string {
  const lines = trailers.map(([k, v]) => `${k}: ${v}`);
  return `${summary.replace(/\s+$/, '')}\n\n${lines.join('\n')}\n`;
}

function trailerBlock(message: string): { body: string; fields: Map<string, string>; lines: Array<[string, string]> } {
  const trimmed = message.trimEnd();
  const cut = trimmed.search(/\n\s*\n(?![\s\S]*\n\s*\n)/);
  const last = cut === -1 ? trimmed : trimmed.slice(cut).trim();
  const fields = new Map<string, string>();
  const lines: Array<[string, string]> = [];
  for (const line of last.split('\n')) {
    const m = /^([A-Za-z-]+): (.*)$/.exec(line);
    if (!m) continue;
    if (!fields.has(m[1] as string)) fields.set(m[1] as string, m[2] as string);
    lines.push([m[1] as string, m[2] as string]);
  }
  const ours = fields.has('Item-Id') || fields.has('Folder-Path');
  return { body: ours && cut !== -1 ? trimmed.slice(0, cut) : trimmed, fields, lines };
}

/** The message as its author wrote it: without the store's trailer block. */
export function messageBody(message: string): string {
  return trailerBlock(message).body;
}

/** The first item a commit names (the only one, but for a commit of several). */
export function parseTrailers(message: string): ItemTrailers | null {
  return parseAllTrailers(message)[0] ?? null;
}

/** Every item a commit names, in order: a group per `Item-Id:` line; a group lacking a field is skipped. */
export function parseAllTrailers(message: string): ItemTrailers[] {
  const groups: Array<Map<string, string>> = [];
  for (const [key, value] of trailerBlock(message).lines) {
    if (key === 'Item-Id') groups.push(new Map());
    const group = groups[groups.length - 1];
    if (group && !group.has(key)) group.set(key, value);
  }
  const out: ItemTrailers[] = [];
  for (const fields of groups) {
    const itemId = fields.get('Item-Id');
    const itemPath = fields.get('Item-Path');
    const action = fields.get('Item-Action') as ItemAction | undefined;
    if (!itemId || !itemPath || !action) continue;
    const fromPath = fields.get('Item-From-Path');
    out.push({ itemId, itemPath, action, ...(fromPath ? { fromPath } : {}) });
  }
  return out;
}
