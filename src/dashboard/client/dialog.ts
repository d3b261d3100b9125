import { h, type Child } from './dom.js';

let counter = 0;

/**
 * A confirmation in a native <dialog> (modal, focus trapped, Escape cancels).
 * Cancel has the focus, so Enter alone never confirms a destructive action.
 */
export function confirmDialog(options: {
  title: string;
  body: Child[];
  confirmLabel: string;
  danger?: boolean;
}): Promise<boolean> {
  const id = `dialog-${++counter}`;
  return new Promise((resolve) => {
    let result = false;
    const cancel = h('button', { type: 'button', class: 'secondary', onclick: () => dialog.close() }, 'Cancel');
    const confirm = h(
      'button',
      {
        type: 'button',
        class: options.danger ? 'danger' : 'primary',
        onclick: () => {
          result = true;
          dialog.close();
        },
      },
      options.confirmLabel,
    );
    const dialog = h(
      'dialog',
      { class: 'confirm', 'aria-labelledby': `${id}-title`, 'aria-describedby': `${id}-body` },
      h('h2', { id: `${id}-title` }, options.title),
      h('div', { id: `${id}-body`, class: 'dialog-body' }, ...options.body),
      h('div', { class: 'dialog-actions' }, cancel, confirm),
    );
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(result);
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}
