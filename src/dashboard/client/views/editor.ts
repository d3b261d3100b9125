import { ApiError, describeError } from '../api.js';
import { renderContent } from '../contentView.js';
import type { Ctx } from '../context.js';
import { confirmDialog } from '../dialog.js';
import { errorBox, h, loading, replace } from '../dom.js';
import { formError } from '../form.js';
import type { Item } from '../types.js';

/** How long typing pauses before the preview is drawn again. */
const PREVIEW_DELAY_MS = 150;

/**
 * Creates an item (no `path`) or edits one: a text area with a live preview, saved with a condition so
 * that two admins never overwrite each other silently. An edit saves with `If-Match: <the ETag it was
 * opened with>`, a new item with `If-None-Match: *`. When someone else saved first (412), the text
 * typed here stays in the editor; their version can be shown beside it and, only then, overwritten
 * on purpose.
 */
export function itemEditor(ctx: Ctx, options: { path?: string; onSaved: (item: Item) => void; onCancel: () => void }): HTMLElement {
  const editing = options.path;
  const box = h('div', { class: 'item-editor' });
  /** The version the text is based on: null for a new item (it must not exist yet). */
  let base: string | null = null;
  let original = '';

  const pathField = h('input', {
    id: 'editor-path',
    type: 'text',
    required: true,
    spellcheck: 'false',
    autocomplete: 'off',
    placeholder: 'e.g. docs/guide.md',
    'aria-describedby': 'editor-path-help',
  });
  const text = h('textarea', { id: 'editor-content', rows: 18, spellcheck: 'true', class: 'editor-text' });
  const message = h('input', { id: 'editor-message', type: 'text', maxlength: '1000', autocomplete: 'off', placeholder: 'What changed (optional)' });
  const preview = h('div', { class: 'editor-preview', id: 'editor-preview', 'aria-label': 'Preview' });
  const formMessage = h('div', { role: 'alert', class: 'form-message' });
  const theirs = h('div', { class: 'their-version' });
  const save = h('button', { type: 'submit', class: 'primary' }, editing ? 'Save' : 'Create item');
  const cancel = h('button', { type: 'button', class: 'secondary', onclick: () => void leave() }, 'Cancel');

  const currentPath = (): string => editing ?? pathField.value.trim();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const drawPreview = (): void => {
    // Shown as the item view will show it: markdown through the same safe renderer (no raw HTML).
    replace(preview, renderContent(currentPath() || 'untitled.md', text.value));
  };
  const schedulePreview = (): void => {
    clearTimeout(timer);
    timer = setTimeout(drawPreview, PREVIEW_DELAY_MS);
  };
  text.addEventListener('input', schedulePreview);
  pathField.addEventListener('input', schedulePreview);

  const leave = async (): Promise<void> => {
    if (text.value !== original) {
      const ok = await confirmDialog({
        title: 'Discard your changes?',
        body: [h('p', null, 'The text typed here has not been saved.')],
        confirmLabel: 'Discard',
        danger: true,
      });
      if (!ok) return;
    }
    options.onCancel();
  };

  const submit = async (overwrite = false): Promise<void> => {
    const path = currentPath();
    if (!path) return formError(formMessage, 'Give the item a path, such as docs/guide.md.', pathField);
    save.disabled = true;
    replace(formMessage);
    if (!overwrite) replace(theirs);
    try {
      const saved = await ctx.api.saveItem(path, text.value, base, message.value.trim() || undefined);
      base = saved.etag;
      original = text.value;
      // A new item navigates to itself: its notice must outlive that one navigation.
      ctx.notify({ text: `${editing ? 'Saved' : 'Created'} ${saved.item.path}.`, keep: !editing });
      options.onSaved(saved.item);
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) conflict(path);
      else formError(formMessage, describeError(err));
    } finally {
      save.disabled = false;
    }
  };

  /** Someone saved first: say so, keep the text, offer their version, and only then an overwrite. */
  const conflict = (path: string): void => {
    const what = base === null ? `An item was created at ${path} after you started` : `Someone else changed ${path} after you opened it`;
    const show = h('button', { type: 'button', class: 'secondary small', onclick: () => void showTheirs(path) }, 'Show their version');
    replace(
      formMessage,
      h('p', { class: 'error-text conflict-text' }, `Not saved: ${what} (412). Your text is still in the editor; nothing was overwritten.`),
      show,
    );
  };

  const showTheirs = async (path: string): Promise<void> => {
    replace(theirs, loading('Loading their version…'));
    try {
      const current = await ctx.api.getTagged(path);
      const overwrite = h(
        'button',
        {
          type: 'button',
          class: 'danger-outline small',
          onclick: () => {
            // On purpose now: the save is conditioned on the version just shown, so a third change still stops it.
            base = current.etag;
            void submit(true);
          },
        },
        'Save my text over theirs',
      );
      replace(
        theirs,
        h('h3', null, `Their version (updated ${current.item.updatedAt.slice(0, 19).replace('T', ' ')} UTC)`),
        h('pre', { class: 'raw wrap', id: 'their-content' }, current.item.content ?? ''),
        overwrite,
      );
    } catch (err) {
      replace(theirs, errorBox(describeError(err), () => void showTheirs(path)));
    }
  };

  const form = h(
    'form',
    {
      class: 'editor-form',
      novalidate: true,
      'aria-labelledby': 'editor-heading',
      onsubmit: (e: Event) => {
        e.preventDefault();
        void submit();
      },
    },
    h('h2', { id: 'editor-heading', tabindex: '-1' }, editing ? `Edit ${editing}` : 'New item'),
    editing
      ? null
      : h(
          'div',
          { class: 'field' },
          h('label', { for: 'editor-path' }, 'Path'),
          pathField,
          h('p', { class: 'help', id: 'editor-path-help' }, 'Lowercase letters, digits, - _ . and / for folders; it ends with an extension such as .md.'),
        ),
    h(
      'div',
      { class: 'editor-panes' },
      h('div', { class: 'field' }, h('label', { for: 'editor-content' }, 'Content (markdown)'), text),
      h('div', { class: 'field' }, h('span', { class: 'label' }, 'Preview'), preview),
    ),
    h('div', { class: 'field' }, h('label', { for: 'editor-message' }, 'Message'), message),
    formMessage,
    h('div', { class: 'editor-actions' }, save, cancel),
    theirs,
  );

  const open = async (): Promise<void> => {
    if (!editing) {
      replace(box, form);
      drawPreview();
      pathField.focus();
      return;
    }
    replace(box, loading(`Loading ${editing}…`));
    try {
      const current = await ctx.api.getTagged(editing);
      base = current.etag;
      original = current.item.content ?? '';
      text.value = original;
      replace(box, form);
      drawPreview();
      text.focus();
    } catch (err) {
      replace(box, errorBox(describeError(err), () => void open()));
    }
  };

  void open();
  return box;
}
