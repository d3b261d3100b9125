import { ApiError, describeError, encodePath } from '../api.js';
import type { Ctx } from '../context.js';
import { empty, errorBox, h, loading, replace } from '../dom.js';
import { snippetParts } from '../snippet.js';
import type { SearchResult } from '../types.js';

/** The search box above the item tree, and its results, shown in place of the tree while a search is on. */
export interface ItemSearch {
  form: HTMLFormElement;
  results: HTMLElement;
  /** The folders offered to search in: those of the tree, so that the choice is always one that exists. */
  setFolders(folders: string[]): void;
  /** Runs the current search again (items changed): a no-op when no search is on. */
  rerun(): void;
}

interface Query {
  q: string;
  /** A folder ending in "/", or undefined for all items. */
  prefix?: string;
}

export function itemSearch(ctx: Ctx, hooks: { selected: () => string | undefined; onToggle: (active: boolean) => void }): ItemSearch {
  let active: Query | undefined;
  /** Counts searches, so that an answer that arrives after a newer search started is dropped. */
  let generation = 0;
  let shown = 0;

  const input = h('input', {
    id: 'item-search',
    type: 'search',
    autocomplete: 'off',
    spellcheck: 'false',
    placeholder: 'e.g. tomato "exact phrase" -draft',
  });
  const scope = h('select', { id: 'search-folder' });
  const scopeField = h('div', { class: 'search-scope', hidden: true }, h('label', { for: 'search-folder' }, 'in'), scope);
  const form = h(
    'form',
    {
      class: 'search-form',
      role: 'search',
      'aria-label': 'Search items',
      novalidate: true,
      onsubmit: (e: Event) => {
        e.preventDefault();
        const q = input.value.trim();
        // Nothing to look for: back to the tree rather than a request the server would refuse.
        if (!q) return clear();
        void run({ q, prefix: scope.value ? `${scope.value}/` : undefined });
      },
    },
    h('label', { for: 'item-search' }, 'Search content'),
    h('div', { class: 'search-row' }, input, h('button', { type: 'submit', class: 'primary small' }, 'Search')),
    scopeField,
  );

  const count = h('p', { class: 'count muted', 'aria-live': 'polite' });
  const body = h('div', { class: 'search-body' });
  const results = h(
    'section',
    { class: 'search-results', 'aria-label': 'Search results', hidden: true },
    h('div', { class: 'search-head' }, count, h('button', { type: 'button', class: 'secondary small', onclick: () => clear() }, 'Clear search')),
    body,
  );

  // Escape leaves the search from the box or from the results, as the Clear button does.
  const onEscape = (e: Event): void => {
    if ((e as KeyboardEvent).key !== 'Escape' || (!active && input.value === '')) return;
    e.preventDefault();
    clear();
  };
  input.addEventListener('keydown', onEscape);
  results.addEventListener('keydown', onEscape);
  // The field's own clear control (Chromium, Safari) empties it: that too ends the search.
  input.addEventListener('search', () => {
    if (input.value === '' && active) clear();
  });

  function clear(): void {
    generation++;
    active = undefined;
    input.value = '';
    results.hidden = true;
    replace(count);
    replace(body);
    hooks.onToggle(false);
    input.focus();
  }

  async function run(query: Query): Promise<void> {
    const mine = ++generation;
    active = query;
    results.hidden = false;
    hooks.onToggle(true);
    replace(count);
    replace(body, loading('Searching…'));
    try {
      const page = await ctx.api.search(query.q, { prefix: query.prefix });
      if (mine !== generation) return;
      shown = page.results.length;
      if (shown === 0) {
        replace(body, empty(`No items match “${query.q}”${where(query)}.`));
        return;
      }
      const list = h('ol', { class: 'result-list' });
      append(list, page.results);
      replace(body, list, more(query, list, page.nextCursor));
      counted(query, page.nextCursor);
    } catch (err) {
      if (mine !== generation) return;
      // A refused query (400) says what is wrong with it: trying it again would not help.
      const retry = err instanceof ApiError && err.status === 400 ? undefined : () => void run(query);
      replace(body, errorBox(describeError(err), retry));
    }
  }

  /** "More results": the next page, appended, and the focus on its first result for keyboard users. */
  function more(query: Query, list: HTMLOListElement, cursor: string | null): HTMLElement | null {
    if (!cursor) return null;
    const box = h('div', { class: 'search-more' });
    const button = h('button', { type: 'button', class: 'secondary small' }, 'More results');
    button.addEventListener('click', async () => {
      const mine = generation;
      button.disabled = true;
      try {
        const page = await ctx.api.search(query.q, { prefix: query.prefix, cursor });
        if (mine !== generation) return;
        const first = append(list, page.results);
        shown += page.results.length;
        const next = more(query, list, page.nextCursor);
        if (next) box.replaceWith(next);
        else box.remove();
        counted(query, page.nextCursor);
        first?.focus();
      } catch (err) {
        if (mine !== generation) return;
        button.disabled = false;
        replace(box, errorBox(describeError(err)), button);
      }
    });
    box.append(button);
    return box;
  }

  /** Adds results to the list; returns the first new link. */
  function append(list: HTMLOListElement, page: SearchResult[]): HTMLAnchorElement | undefined {
    const links = page.map((r) =>
      h(
        'a',
        { href: `#/items/${encodePath(r.path)}`, 'data-path': r.path, 'aria-current': r.path === hooks.selected() ? 'page' : null },
        h('span', { class: 'result-path' }, r.path),
        r.snippet ? h('span', { class: 'snippet' }, snippetParts(r.snippet).map((p) => (p.marked ? h('mark', null, p.text) : p.text))) : null,
      ),
    );
    list.append(...links.map((a) => h('li', null, a)));
    return links[0];
  }

  function counted(query: Query, cursor: string | null): void {
    const what = `“${query.q}”${where(query)}`;
    count.textContent = cursor
      ? `The best ${shown} items matching ${what}; more follow.`
      : shown === 1
        ? `1 item matches ${what}.`
        : `${shown} items match ${what}.`;
  }

  return {
    form,
    results,
    setFolders(folders) {
      const kept = scope.value;
      replace(
        scope,
        h('option', { value: '' }, 'all folders'),
        folders.map((f) => h('option', { value: f }, `${f}/`)),
      );
      scope.value = folders.includes(kept) ? kept : '';
      scopeField.hidden = folders.length === 0;
    },
    rerun() {
      if (active) void run(active);
    },
  };
}

const where = (query: Query): string => (query.prefix ? ` in ${query.prefix}` : '');
