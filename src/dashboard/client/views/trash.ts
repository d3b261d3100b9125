import { describeError, encodePath } from '../api.js';
import type { Ctx, View } from '../context.js';
import { confirmDialog } from '../dialog.js';
import { empty, errorBox, h, loading, replace, table, time } from '../dom.js';
import type { ApiKey, TrashItem } from '../types.js';

/** Soft-deleted items: Restore (same id and history) or Purge (the path is free again). */
export function trashView(ctx: Ctx): View {
  const body = h('div', { class: 'trash-body' });
  const el = h(
    'section',
    { class: 'page', 'aria-labelledby': 'trash-heading' },
    h(
      'div',
      { class: 'page-head' },
      h('h1', { id: 'trash-heading', tabindex: '-1' }, 'Trash'),
      h('button', { type: 'button', class: 'secondary small', onclick: () => void load() }, 'Refresh'),
    ),
    h(
      'p',
      { class: 'lead' },
      'Deleted items wait here. Restore puts an item back at its path with the same id and history. Purge removes it for good from the dashboard; its old versions stay only in the git history.',
    ),
    body,
  );

  const load = async (): Promise<void> => {
    replace(body, loading('Loading the trash…'));
    try {
      const [items, keys] = await Promise.all([ctx.api.trash(), ctx.api.keys().catch((): ApiKey[] => [])]);
      render(items, new Map(keys.map((k) => [k.id, k])));
    } catch (err) {
      replace(body, errorBox(describeError(err), () => void load()));
    }
  };

  const restore = async (item: TrashItem, button: HTMLButtonElement): Promise<void> => {
    button.disabled = true;
    try {
      await ctx.api.restore(item.path);
      ctx.notify({ text: `Restored ${item.path}.`, link: { href: `#/items/${encodePath(item.path)}`, label: 'Open it' } });
      await load();
    } catch (err) {
      button.disabled = false;
      ctx.notify({ kind: 'error', text: `Restore failed. ${describeError(err)}` });
    }
  };

  const purge = async (item: TrashItem): Promise<void> => {
    const ok = await confirmDialog({
      title: `Purge ${item.path}?`,
      body: [
        h('p', null, h('strong', null, 'This cannot be undone from the dashboard.'), ' The item leaves the trash, its path is free again, and a new item there gets a new id.'),
        h('p', null, 'Its past versions stay only in the git history of the repository (for a git clone or a backup).'),
      ],
      confirmLabel: 'Purge permanently',
      danger: true,
    });
    if (!ok) return;
    try {
      await ctx.api.purge(item.path);
      ctx.notify(`Purged ${item.path}. The path is free again.`);
      await load();
    } catch (err) {
      ctx.notify({ kind: 'error', text: `Purge failed. ${describeError(err)}` });
    }
  };

  function render(items: TrashItem[], keys: Map<string, ApiKey>): void {
    if (items.length === 0) {
      replace(body, empty('The trash is empty. Items deleted through the API or the dashboard appear here.'));
      return;
    }
    const sorted = [...items].sort((a, b) => (b.deletedAt ?? '').localeCompare(a.deletedAt ?? ''));
    const rows = sorted.map((item) => {
      const by = item.deletedBy ? keys.get(item.deletedBy) : undefined;
      const restoreButton = h('button', { type: 'button', class: 'primary small', 'data-action': 'restore' }, 'Restore');
      restoreButton.addEventListener('click', () => void restore(item, restoreButton));
      return [
        h('code', { class: 'path' }, item.path),
        time(item.deletedAt, 'unknown'),
        by ? h('span', null, by.name, h('code', { class: 'muted small-code key-id' }, by.id)) : h('code', null, item.deletedBy ?? 'unknown'),
        h(
          'span',
          { class: 'row-actions' },
          restoreButton,
          h('button', { type: 'button', class: 'danger-outline small', 'data-action': 'purge', onclick: () => void purge(item) }, 'Purge…'),
        ),
      ];
    });
    replace(
      body,
      h('p', { class: 'count muted' }, `${items.length} item${items.length === 1 ? '' : 's'} in the trash`),
      table('Items in the trash, most recently deleted first', ['Path', 'Deleted', 'Deleted by', 'Actions'], rows, 'trash'),
    );
  }

  void load();
  return { el, title: 'Trash' };
}
