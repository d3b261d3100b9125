/**
 * A tiny element builder. Text always goes in as text nodes, never as HTML: item
 * content, paths, commit messages and key names are untrusted. The only HTML the
 * page ever parses is markdown-it's output (see markdown.ts).
 */
export type Child = Node | string | number | null | undefined | false;
type AttrValue = string | number | boolean | null | undefined;
export type Attrs = Record<string, AttrValue | ((event: Event) => void)>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (typeof value === 'function') el.addEventListener(name.slice(2).toLowerCase(), value);
    else if (value === true) el.setAttribute(name, '');
    else if (value !== false && value !== null && value !== undefined) el.setAttribute(name, String(value));
  }
  append(el, children);
  return el;
}

export function append(el: Element | DocumentFragment, children: (Child | Child[])[]): void {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'number' ? String(child) : child);
  }
}

/** Replaces everything inside `el`. */
export function replace(el: Element, ...children: (Child | Child[])[]): void {
  el.replaceChildren();
  append(el, children);
}

/** `2025-11-22 09:42` in local time, with the exact instant in the title and datetime. */
export function time(iso: string | null | undefined, empty = 'never'): HTMLElement {
  if (!iso) return h('span', { class: 'muted' }, empty);
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return h('span', null, iso);
  const pad = (n: number): string => String(n).padStart(2, '0');
  const text = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return h('time', { datetime: iso, title: iso }, text);
}

/** A waiting line, announced to screen readers. */
export function loading(text: string): HTMLElement {
  return h('p', { class: 'state loading', role: 'status' }, h('span', { class: 'spinner', 'aria-hidden': 'true' }), text);
}

/** An empty state: words, never a blank pane. */
export function empty(text: string, ...more: Child[]): HTMLElement {
  return h('div', { class: 'state empty' }, h('p', null, text), ...more);
}

/** An error in words, with a retry when one makes sense. */
export function errorBox(message: string, retry?: () => void): HTMLElement {
  return h(
    'div',
    { class: 'state error', role: 'alert' },
    h('p', null, message),
    retry ? h('button', { type: 'button', class: 'secondary', onclick: retry }, 'Try again') : null,
  );
}

/** A table whose cells carry their column name, so that a phone can show each row as a card. */
export function table(caption: string, columns: string[], rows: Child[][], className = ''): HTMLTableElement {
  return h(
    'table',
    { class: `data ${className}`.trim() },
    h('caption', { class: 'visually-hidden' }, caption),
    h('thead', null, h('tr', null, columns.map((c) => h('th', { scope: 'col' }, c)))),
    h(
      'tbody',
      null,
      rows.map((cells) => h('tr', null, cells.map((cell, i) => h('td', { 'data-label': columns[i] ?? '' }, h('div', { class: 'cell' }, cell))))),
    ),
  );
}
