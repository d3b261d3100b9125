import { encodePath } from './api.js';
import { h, table, type Child } from './dom.js';
import type { RevertOutcome } from './types.js';

/**
 * What a revert did, in words: the items taken back (linked), and the items left alone because
 * someone else changed them after the reverted change, each with why and its version now. When
 * there are such conflicts, `force` (if given) is offered as a separate, clearly labelled button:
 * it takes those back too, overwriting the later changes.
 */
export function revertOutcome(outcome: RevertOutcome, force?: () => void): HTMLElement {
  const parts: Child[] = [];
  const link = (path: string): HTMLElement => h('a', { href: `#/items/${encodePath(path)}` }, path);
  if (outcome.commitId === null && outcome.conflicts.length === 0) {
    parts.push(h('p', null, 'Nothing to undo: everything is already as it was before.'));
  }
  if (outcome.reverted.length > 0) {
    parts.push(
      h('p', { class: 'ok-text' }, `Undone in one new commit (${(outcome.commitId ?? '').slice(0, 12)}): ${outcome.reverted.length} item${outcome.reverted.length === 1 ? '' : 's'}.`),
      h('ul', { class: 'reverted-paths' }, outcome.reverted.map((p) => h('li', null, link(p)))),
    );
  }
  if (outcome.conflicts.length > 0) {
    parts.push(
      h('p', { class: 'error-text' }, `${outcome.conflicts.length} item${outcome.conflicts.length === 1 ? ' was' : 's were'} left alone: changed by someone else since.`),
      table(
        'Items left alone',
        ['Path', 'Why', 'Version now'],
        outcome.conflicts.map((c) => [h('code', null, c.path), c.why, c.current ? `v${c.current.version}` : '—']),
        'conflicts',
      ),
      force ? h('button', { type: 'button', class: 'danger-outline small', 'data-force': 'true', onclick: force }, 'Undo these too, overwriting their changes') : null,
    );
  }
  return h('div', { class: 'revert-outcome', role: 'status' }, parts);
}
