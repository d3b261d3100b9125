import { diffHunks, diffStats, sideBySide, type DiffLine } from './diff.js';
import { h } from './dom.js';

export type DiffLayout = 'unified' | 'split';

const SIGN: Record<DiffLine['kind'], string> = { add: '+', del: '−', context: ' ', note: '' };

/** The API's unified diff as a table: one column of lines (unified) or old beside new (split). */
export function renderDiff(text: string, layout: DiffLayout, labels: { from: string; to: string }): HTMLElement {
  const hunks = diffHunks(text);
  if (hunks.length === 0) return h('p', { class: 'state empty' }, `${labels.from} and ${labels.to} have the same content.`);
  const { added, removed } = diffStats(hunks);
  const summary = h(
    'p',
    { class: 'diff-summary' },
    `From ${labels.from} to ${labels.to}: `,
    h('span', { class: 'added-count' }, `${added} line${added === 1 ? '' : 's'} added`),
    ', ',
    h('span', { class: 'removed-count' }, `${removed} removed`),
    '.',
  );
  const body: HTMLElement[] = [];
  for (const hunk of hunks) {
    body.push(h('tr', { class: 'hunk' }, h('td', { colspan: layout === 'split' ? 4 : 3 }, hunk.header)));
    if (layout === 'unified') {
      for (const line of hunk.lines) {
        body.push(
          h(
            'tr',
            { class: `line ${line.kind}` },
            h('td', { class: 'num' }, line.oldNo ?? ''),
            h('td', { class: 'num' }, line.newNo ?? ''),
            h('td', { class: 'code' }, h('span', { class: 'sign', 'aria-hidden': 'true' }, SIGN[line.kind]), srKind(line), line.text),
          ),
        );
      }
    } else {
      for (const { left, right } of sideBySide(hunk)) {
        body.push(
          h(
            'tr',
            { class: 'line' },
            h('td', { class: 'num' }, left?.oldNo ?? ''),
            h('td', { class: `code ${left ? (left.kind === 'del' ? 'del' : 'context') : 'blank'}` }, left ? [srKind(left), left.text] : ''),
            h('td', { class: 'num' }, right?.newNo ?? ''),
            h('td', { class: `code ${right ? (right.kind === 'add' ? 'add' : 'context') : 'blank'}` }, right ? [srKind(right), right.text] : ''),
          ),
        );
      }
    }
  }
  const head =
    layout === 'split'
      ? h('tr', null, h('th', { scope: 'col', colspan: 2 }, labels.from), h('th', { scope: 'col', colspan: 2 }, labels.to))
      : h('tr', null, h('th', { scope: 'col' }, 'Old'), h('th', { scope: 'col' }, 'New'), h('th', { scope: 'col' }, 'Line'));
  return h(
    'div',
    { class: 'diff-wrap' },
    summary,
    h('div', { class: 'diff-scroll' }, h('table', { class: `diff ${layout}` }, columns(layout), h('thead', null, head), h('tbody', null, body))),
  );
}

/** Fixed column widths: numbers narrow, text columns share the rest (equally when side by side). */
function columns(layout: DiffLayout): HTMLElement {
  const num = (): HTMLElement => h('col', { class: 'num-col' });
  const code = (): HTMLElement => h('col', { class: 'code-col' });
  return h('colgroup', null, layout === 'split' ? [num(), code(), num(), code()] : [num(), num(), code()]);
}

/** The +/− signs are decoration; a screen reader hears the words. */
function srKind(line: DiffLine): HTMLElement | null {
  if (line.kind === 'add') return h('span', { class: 'visually-hidden' }, 'added: ');
  if (line.kind === 'del') return h('span', { class: 'visually-hidden' }, 'removed: ');
  return null;
}
