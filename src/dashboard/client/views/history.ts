import { describeError, encodePath } from '../api.js';
import type { Ctx } from '../context.js';
import { confirmDialog } from '../dialog.js';
import { renderDiff, type DiffLayout } from '../diffView.js';
import { empty, errorBox, h, loading, replace, table, time } from '../dom.js';
import { revertOutcome } from '../revertOutcome.js';
import type { Item, RevertOutcome, Version } from '../types.js';

/** An item's versions (who, when, message), a diff between any two, and roll back to one. */
export function historyPanel(ctx: Ctx, item: Item, hooks: { onRolledBack: () => void; onReverted: () => void }): HTMLElement {
  const box = h('div', { class: 'history' });
  /** What the last "revert this change" did: kept on screen while it has conflicts to decide on. */
  const outcome = h('div', { class: 'revert-result', 'aria-live': 'polite' });

  const load = async (): Promise<void> => {
    replace(box, loading('Loading history…'));
    try {
      const versions = await ctx.api.history(item.path);
      replace(box, ...render(versions));
    } catch (err) {
      replace(box, errorBox(describeError(err), () => void load()));
    }
  };

  const rollback = async (v: Version, newest: number): Promise<void> => {
    const ok = await confirmDialog({
      title: `Roll back ${item.path} to version ${v.version}?`,
      body: [
        h('p', null, `The item gets the content of version ${v.version} as a new version ${newest + 1}.`),
        h('p', null, 'Nothing is lost: every version stays in the history.'),
      ],
      confirmLabel: `Roll back to version ${v.version}`,
    });
    if (!ok) return;
    try {
      await ctx.api.rollback(item.path, v.version);
      ctx.notify(`Rolled back ${item.path} to version ${v.version}.`);
      hooks.onRolledBack();
    } catch (err) {
      ctx.notify({ kind: 'error', text: `Roll back failed. ${describeError(err)}` });
    }
  };

  /**
   * "Revert this change": a new commit undoing that version's commit (every item it changed). Items
   * someone changed since are left alone and listed; undoing those too is a second, separate choice.
   */
  const revert = async (v: Version, force = false): Promise<void> => {
    const ok =
      force ||
      (await confirmDialog({
        title: `Revert the change of version ${v.version}?`,
        body: [
          h('p', null, `A new commit undoes commit `, h('code', null, v.commitId.slice(0, 12)), ` (“${v.message}”) for every item it changed.`),
          h('p', null, 'Items someone changed after it are left alone and listed; nothing is lost either way.'),
        ],
        confirmLabel: 'Revert this change',
      }));
    if (!ok) return;
    let result: RevertOutcome;
    try {
      result = await ctx.api.revert({ commitId: v.commitId }, force);
    } catch (err) {
      ctx.notify({ kind: 'error', text: `Revert failed. ${describeError(err)}` });
      return;
    }
    if (result.conflicts.length === 0) {
      const text = result.commitId ? `Reverted the change of version ${v.version} (${result.reverted.join(', ')}).` : 'Nothing to revert: already as before.';
      // A reverted move takes the item back to its old path: follow it there.
      const [only] = result.reverted;
      const elsewhere = result.reverted.length === 1 && only !== undefined && only !== item.path;
      ctx.notify({ text, keep: elsewhere });
      if (elsewhere) {
        hooks.onReverted();
        ctx.navigate(`#/items/${encodePath(only)}`);
        return;
      }
      hooks.onRolledBack();
      return;
    }
    if (result.commitId) hooks.onReverted();
    replace(outcome, revertOutcome(result, () => void revert(v, true)));
  };

  function render(versions: Version[]): HTMLElement[] {
    if (versions.length === 0) return [empty('This item has no recorded versions.')];
    const newest = Math.max(...versions.map((v) => v.version));
    const preview = h('div', { class: 'version-preview', 'aria-live': 'polite' });
    const showVersion = async (v: Version): Promise<void> => {
      replace(preview, loading(`Loading version ${v.version}…`));
      try {
        const then = await ctx.api.getItem(item.path, v.version);
        replace(
          preview,
          h('h3', null, `Content of version ${v.version}`),
          h('pre', { class: 'raw wrap' }, then.content ?? ''),
          h('button', { type: 'button', class: 'secondary small', onclick: () => replace(preview) }, 'Close'),
        );
      } catch (err) {
        replace(preview, errorBox(describeError(err), () => void showVersion(v)));
      }
    };
    const rows = versions.map((v) => [
      h('span', { class: 'version-no' }, `v${v.version}`),
      h('span', { class: `action action-${v.action}` }, v.action),
      h('span', { class: 'message' }, v.message),
      h('span', null, v.author.name, h('code', { class: 'muted small-code key-id' }, v.author.keyId)),
      time(v.timestamp),
      h(
        'span',
        { class: 'row-actions' },
        h('button', { type: 'button', class: 'secondary small', onclick: () => void showVersion(v) }, 'View'),
        h('button', { type: 'button', class: 'secondary small', 'data-revert': v.commitId, onclick: () => void revert(v) }, 'Revert this change'),
        v.version === newest
          ? h('span', { class: 'muted current' }, 'current')
          : h('button', { type: 'button', class: 'secondary small', 'data-rollback': v.version, onclick: () => void rollback(v, newest) }, `Roll back to v${v.version}`),
      ),
    ]);
    return [
      h('h3', null, `${versions.length} version${versions.length === 1 ? '' : 's'}`),
      outcome,
      table(`Versions of ${item.path}, newest first`, ['Version', 'Action', 'Message', 'Author', 'When', 'Actions'], rows, 'versions'),
      preview,
      compare(versions),
    ];
  }

  function compare(versions: Version[]): HTMLElement {
    if (versions.length < 2) return h('section', { class: 'compare' }, h('h3', null, 'Compare versions'), empty('Only one version so far: nothing to compare yet.'));
    const ordered = [...versions].sort((a, b) => a.version - b.version);
    const option = (v: Version, selected: boolean): HTMLOptionElement =>
      h('option', { value: v.version, selected }, `v${v.version} · ${v.action} · ${v.timestamp.slice(0, 16).replace('T', ' ')}`);
    const last = ordered[ordered.length - 1] as Version;
    const before = ordered[ordered.length - 2] as Version;
    const from = h('select', { id: 'diff-from' }, ordered.map((v) => option(v, v === before)));
    const to = h('select', { id: 'diff-to' }, ordered.map((v) => option(v, v === last)));
    let layout: DiffLayout = 'unified';
    const radio = (value: DiffLayout, label: string): HTMLElement =>
      h(
        'label',
        { class: 'radio' },
        h('input', {
          type: 'radio',
          name: 'diff-layout',
          value,
          checked: value === layout,
          onchange: () => {
            layout = value;
            void show();
          },
        }),
        label,
      );
    const output = h('div', { class: 'diff-output', 'aria-live': 'polite' });
    const show = async (): Promise<void> => {
      const a = Number(from.value);
      const b = Number(to.value);
      replace(output, loading(`Comparing version ${a} with version ${b}…`));
      try {
        const text = await ctx.api.diff(item.path, a, b);
        replace(output, renderDiff(text, layout, { from: `version ${a}`, to: `version ${b}` }));
      } catch (err) {
        replace(output, errorBox(describeError(err), () => void show()));
      }
    };
    from.addEventListener('change', () => void show());
    to.addEventListener('change', () => void show());
    void show();
    return h(
      'section',
      { class: 'compare' },
      h('h3', null, 'Compare versions'),
      h(
        'div',
        { class: 'compare-controls' },
        h('div', { class: 'field' }, h('label', { for: 'diff-from' }, 'From'), from),
        h('div', { class: 'field' }, h('label', { for: 'diff-to' }, 'To'), to),
        h('fieldset', { class: 'layout-choice' }, h('legend', null, 'Layout'), radio('unified', 'Unified'), radio('split', 'Side by side')),
      ),
      output,
    );
  }

  void load();
  return box;
}
