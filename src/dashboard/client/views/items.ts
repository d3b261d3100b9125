import { ancestorFolders } from '../../../domain/paths.js';
import { describeError, encodePath } from '../api.js';
import type { Ctx, Route, View } from '../context.js';
import { empty, errorBox, h, loading, replace } from '../dom.js';
import { buildTree, filterPaths, type TreeFolder } from '../tree.js';
import type { Item } from '../types.js';
import { itemEditor } from './editor.js';
import { itemDetail } from './item.js';
import { itemSearch } from './search.js';

/** Below this many items every folder starts open; above it, only those on the way to the open item. */
const OPEN_ALL_BELOW = 200;

/** Items: the folder tree with a path filter (or the results of a search) on the left, the open item on the right. */
export function itemsView(ctx: Ctx, initial: Extract<Route, { name: 'items' }>): View {
  let selected = initial.path;
  let paths: string[] | null = null;
  const open = new Set<string>();

  const heading = h('h1', { tabindex: '-1', id: 'items-heading' }, 'Items');
  const count = h('p', { class: 'count muted', 'aria-live': 'polite' });
  const filter = h('input', { id: 'item-filter', type: 'search', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. docs/ or guide' });
  const treeBox = h('div', { class: 'tree-box' });
  const detail = h('section', { class: 'detail-pane', 'aria-label': 'Open item' });
  const refresh = h('button', { type: 'button', class: 'secondary small', onclick: () => void loadTree() }, 'Refresh');
  const create = h('button', { type: 'button', class: 'primary small', onclick: () => newItem() }, 'New item');
  // While a search is on, its results take the tree's place; the tree keeps its state for when it ends.
  const treePart = h('div', { class: 'tree-part' }, h('label', { for: 'item-filter' }, 'Filter by path'), filter, count, treeBox);
  const search = itemSearch(ctx, { selected: () => selected, onToggle: (searching) => {
      treePart.hidden = searching;
    },
  });
  const treePane = h(
    'section',
    { class: 'tree-pane', 'aria-labelledby': 'items-heading' },
    h('div', { class: 'pane-head' }, heading, h('div', { class: 'pane-actions' }, create, refresh)),
    search.form,
    treePart,
    search.results,
  );
  const layout = h('div', { class: 'items-layout' }, treePane, detail);
  filter.addEventListener('input', () => renderTree());

  async function loadTree(): Promise<void> {
    // Items changed (or Refresh): results shown from before may name a moved or deleted item.
    search.rerun();
    replace(treeBox, loading('Loading items…'));
    replace(count);
    try {
      const items: Item[] = await ctx.api.listItems();
      const first = paths === null;
      paths = items.map((i) => i.path);
      if (first && paths.length < OPEN_ALL_BELOW) for (const p of paths) ancestorFolders(p).forEach((f) => open.add(f));
      if (selected) ancestorFolders(selected).forEach((f) => open.add(f));
      search.setFolders([...new Set(paths.flatMap(ancestorFolders))].sort());
      renderTree();
    } catch (err) {
      replace(treeBox, errorBox(describeError(err), () => void loadTree()));
    }
  }

  function renderTree(): void {
    if (paths === null) return;
    const words = filter.value.trim();
    if (paths.length === 0) {
      replace(count);
      replace(treeBox, empty('No items yet. Create one with “New item”, or write through the API (PUT /api/v1/knowledge/items/{path}).'));
      return;
    }
    const shown = filterPaths(paths, words);
    count.textContent = words ? `${shown.length} of ${paths.length} items match` : `${paths.length} item${paths.length === 1 ? '' : 's'}`;
    if (shown.length === 0) {
      replace(treeBox, empty(`No item path contains “${words}”.`));
      return;
    }
    const tree = buildTree(shown);
    replace(treeBox, h('ul', { class: 'tree', 'aria-label': 'Items by folder' }, children(tree, words !== '')));
  }

  function children(folder: TreeFolder, filtering: boolean): HTMLLIElement[] {
    const folders = folder.folders.map((f) => {
      const details = h(
        'details',
        { open: filtering || open.has(f.path) },
        h('summary', null, h('span', { class: 'folder-name' }, `${f.name}/`), h('span', { class: 'badge', 'aria-label': `${f.count} items` }, f.count)),
        h('ul', null, children(f, filtering)),
      );
      details.addEventListener('toggle', () => {
        if (filtering) return;
        if (details.open) open.add(f.path);
        else open.delete(f.path);
      });
      return h('li', { class: 'folder' }, details);
    });
    const items = folder.items.map((i) =>
      h(
        'li',
        { class: 'leaf' },
        h('a', { href: `#/items/${encodePath(i.path)}`, 'data-path': i.path, 'aria-current': i.path === selected ? 'page' : null, title: i.path }, i.name),
      ),
    );
    return [...folders, ...items];
  }

  /** The editor in the detail pane, for an item that does not exist yet. */
  function newItem(): void {
    layout.classList.add('has-selection');
    replace(
      detail,
      itemEditor(ctx, {
        onSaved: (item) => {
          ctx.navigate(`#/items/${encodePath(item.path)}`);
          void loadTree();
        },
        onCancel: () => showDetail(),
      }),
    );
  }

  function showDetail(): void {
    // The tree's links and the search results' alike.
    for (const a of treePane.querySelectorAll<HTMLAnchorElement>('a[data-path]')) {
      if (a.dataset.path === selected) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    layout.classList.toggle('has-selection', selected !== undefined);
    if (!selected) {
      replace(detail, empty('Select an item in the tree to see its content, metadata, permission requirements and history.'));
      return;
    }
    replace(
      detail,
      itemDetail(ctx, selected, {
        onChanged: () => void loadTree(),
        onDeleted: () => {
          paths = paths?.filter((p) => p !== selected) ?? null;
          ctx.navigate('#/items');
          void loadTree();
        },
      }),
    );
  }

  void loadTree();
  showDetail();
  return {
    el: layout,
    title: selected ? selected : 'Items',
    update(route) {
      if (route.name !== 'items') return;
      selected = route.path;
      this.title = selected ?? 'Items';
      showDetail();
    },
  };
}
