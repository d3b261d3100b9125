import { effectiveRequirement } from '../access.js';
import { ApiError, describeError, encodePath } from '../api.js';
import type { Ctx } from '../context.js';
import { confirmDialog } from '../dialog.js';
import { empty, errorBox, h, loading, replace, time } from '../dom.js';
import { renderContent } from '../contentView.js';
import { tabs } from '../tabs.js';
import type { FolderRule, Item } from '../types.js';
import { itemEditor } from './editor.js';
import { historyPanel } from './history.js';
import { moveDialog } from './move.js';

/** The open item: its content rendered and raw, its metadata and permissions, its history. */
export function itemDetail(ctx: Ctx, path: string, hooks: { onChanged: () => void; onDeleted: () => void }): HTMLElement {
  const box = h('div', { class: 'item-detail' });

  const load = async (tab?: string): Promise<void> => {
    replace(box, loading(`Loading ${path}…`));
    try {
      const [tagged, rules] = await Promise.all([ctx.api.getTagged(path), ctx.api.folders().catch(() => null)]);
      replace(box, ...render({ ...tagged.item, etag: tagged.etag }, rules, tab));
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) {
        // Moved away or put in the trash (by a revert, say, or another admin): say where to look.
        const trash = h('a', { href: '#/trash' }, 'the trash');
        return replace(box, back(), empty(`There is no item at ${path} now: it may have been moved, or put in the trash.`, h('p', null, 'Look in ', trash, ' or in the tree.')));
      }
      replace(box, back(), errorBox(describeError(err), () => void load(tab)));
    }
  };

  const remove = async (item: Item): Promise<void> => {
    const ok = await confirmDialog({
      title: `Move ${item.path} to the trash?`,
      body: [h('p', null, 'It disappears from lists and reads at once. An admin can restore it from the Trash with the same id and history.')],
      confirmLabel: 'Move to trash',
      danger: true,
    });
    if (!ok) return;
    try {
      await ctx.api.deleteItem(item.path);
      ctx.notify({ text: `Moved ${item.path} to the trash.`, link: { href: '#/trash', label: 'Open the trash' }, keep: true });
      hooks.onDeleted();
    } catch (err) {
      ctx.notify({ kind: 'error', text: describeError(err) });
    }
  };

  const edit = (item: Item): void => {
    const editor = itemEditor(ctx, {
      path: item.path,
      onSaved: () => {
        hooks.onChanged();
        void load();
      },
      onCancel: () => void load(),
    });
    replace(box, back(), editor);
  };

  function render(item: Item & { etag: string }, rules: FolderRule[] | null, tab?: string): HTMLElement[] {
    const head = h(
      'div',
      { class: 'item-head' },
      h('div', null, h('h2', { class: 'item-path', tabindex: '-1' }, item.path), h('p', { class: 'muted' }, 'Updated ', time(item.updatedAt))),
      h(
        'div',
        { class: 'item-actions' },
        h('button', { type: 'button', class: 'primary', onclick: () => edit(item) }, 'Edit'),
        h('button', { type: 'button', class: 'secondary', onclick: () => void moveDialog(ctx, item, hooks.onChanged) }, 'Move…'),
        h('button', { type: 'button', class: 'danger-outline', onclick: () => void remove(item) }, 'Move to trash'),
      ),
    );
    const content = item.content ?? '';
    const panel = tabs(
      `${item.path}`,
      [
        { id: 'rendered', label: 'Rendered', render: () => renderContent(item.path, content) },
        { id: 'raw', label: 'Raw', render: () => h('pre', { class: 'raw' }, h('code', null, content)) },
        { id: 'details', label: 'Details', render: () => details(item, rules) },
        {
          id: 'history',
          label: 'History',
          render: () =>
            historyPanel(ctx, item, {
              onRolledBack: () => {
                hooks.onChanged();
                void load('history');
              },
              onReverted: hooks.onChanged,
            }),
        },
      ],
      tab,
    );
    return [back(), head, panel];
  }

  void load();
  return box;
}

/** On a phone the tree is hidden while an item is open: the way back to it. */
const back = (): HTMLElement => h('a', { class: 'back-link', href: '#/items' }, '← All items');

function details(item: Item, rules: FolderRule[] | null): HTMLElement {
  const parent = item.path.split('/').slice(0, -1).join('/');
  const ruleLink = (folder: string): HTMLElement =>
    h('span', { class: 'folder-link' }, ' · ', h('a', { href: `#/folders/${encodePath(folder)}` }, `Edit the rule of ${folder}/`));
  const requirement = (kind: 'read' | 'write'): HTMLElement => {
    const stored = (kind === 'read' ? item.requiredReadPermission : item.requiredWritePermission) ?? 'inherit';
    if (!rules) return h('span', null, h('code', null, stored), ' (folder rules could not be read)');
    const { permission, from, folder } = effectiveRequirement({ requirement: stored, path: item.path, kind, rules });
    // The folder whose rule decides, else the item's own folder (where a rule would take effect).
    const editable = folder ?? parent;
    return h(
      'span',
      { class: 'requirement' },
      h('code', null, stored),
      stored === 'inherit' ? h('span', null, ' → ', h('code', null, permission), ` (${from})`) : null,
      editable ? ruleLink(editable) : null,
    );
  };
  const row = (term: string, value: Node | string): HTMLElement[] => [h('dt', null, term), h('dd', null, value)];
  return h(
    'dl',
    { class: 'meta' },
    row('Path', h('code', null, item.path)),
    row('Id', h('code', null, item.id)),
    row('Organization', item.organizationId),
    row('Type', item.itemType),
    row('Created', time(item.createdAt)),
    row('Updated', time(item.updatedAt)),
    row('Read requirement', requirement('read')),
    row('Write requirement', requirement('write')),
  );
}
