import { describeError, encodePath } from '../api.js';
import type { Ctx } from '../context.js';
import { confirmDialog } from '../dialog.js';
import { h } from '../dom.js';
import type { Item } from '../types.js';

/**
 * Asks for the new path and moves the item there (POST /move): the same id, creation time and
 * history. The move is conditioned on the version shown (its ETag), so an item changed meanwhile
 * is not moved blindly; the server's refusal (taken, bad path, 412) is shown in words.
 */
export async function moveDialog(ctx: Ctx, item: Item & { etag?: string }, onMoved: () => void): Promise<void> {
  const field = h('input', { id: 'move-to', type: 'text', value: item.path, spellcheck: 'false', autocomplete: 'off' });
  const ok = await confirmDialog({
    title: `Move ${item.path}`,
    body: [
      h('p', null, 'It keeps its id and its whole history; the old path is free afterwards.'),
      h('label', { for: 'move-to' }, 'New path'),
      field,
    ],
    confirmLabel: 'Move',
  });
  if (!ok) return;
  const to = field.value.trim();
  if (to === item.path) return;
  try {
    const moved = await ctx.api.moveItem(item.path, to, item.etag);
    ctx.notify({ text: `Moved ${item.path} to ${moved.path}.`, keep: true });
    onMoved();
    ctx.navigate(`#/items/${encodePath(moved.path)}`);
  } catch (err) {
    ctx.notify({ kind: 'error', text: `Move failed. ${describeError(err)}` });
  }
}
