import { describeError } from '../api.js';
import type { Ctx } from '../context.js';
import { h } from '../dom.js';
import type { Item } from '../types.js';

/** 1536 → "1.5 KB": sizes as people read them. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KB', 'MB', 'GB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value < 10 ? value.toFixed(1) : Math.round(value)} ${units[unit]}`;
}

/** A file item's original: its name, type and size, and a button that downloads it. */
export function fileSummary(ctx: Ctx, item: Item): HTMLElement {
  const name = item.fileName ?? item.path.split('/').pop() ?? 'file';
  const download = async (): Promise<void> => {
    try {
      const blob = await ctx.api.downloadFile(item.path);
      const url = URL.createObjectURL(blob);
      const a = h('a', { href: url, download: name, hidden: true });
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (err) {
      ctx.notify({ kind: 'error', text: describeError(err) });
    }
  };
  return h(
    'div',
    { class: 'file-summary' },
    h('span', { class: 'file-name' }, name),
    h('span', { class: 'muted' }, ` · ${item.contentType ?? 'unknown type'} · ${formatSize(item.fileSize ?? 0)} `),
    h('button', { type: 'button', class: 'secondary small', onclick: () => void download() }, 'Download original'),
  );
}

/** A path for an uploaded file from its name: lowercase, only the characters paths allow, under `folder`. */
export function suggestPath(folder: string, fileName: string): string {
  const dot = fileName.lastIndexOf('.');
  const stem = (dot > 0 ? fileName.slice(0, dot) : fileName).toLowerCase().replace(/[^a-z0-9_-]+/g, '-').replace(/^-+|-+$/g, '') || 'file';
  const ext = dot > 0 ? fileName.slice(dot + 1).toLowerCase().replace(/[^a-z0-9]/g, '') : '';
  return `${folder ? `${folder.replace(/\/+$/, '')}/` : ''}${stem}${ext ? `.${ext}` : '.txt'}`;
}

/**
 * "Upload a file": pick a file, adjust the path it gets (suggested from its name), send it.
 * PDF, DOCX, HTML and text files; the server extracts the text and keeps the original.
 */
export function uploadForm(ctx: Ctx, hooks: { onUploaded: (item: Item) => void; onCancel: () => void }): HTMLElement {
  const file = h('input', { id: 'upload-file', type: 'file', accept: '.pdf,.docx,.html,.htm,.txt,.md,.csv,.json,text/*', required: true });
  const path = h('input', { id: 'upload-path', type: 'text', required: true, autocomplete: 'off', spellcheck: 'false', placeholder: 'docs/report.pdf' });
  const status = h('p', { class: 'muted', 'aria-live': 'polite' });
  const submit = h('button', { type: 'submit' }, 'Upload');
  file.addEventListener('change', () => {
    const chosen = file.files?.[0];
    if (chosen) path.value = suggestPath(path.value.includes('/') ? path.value.slice(0, path.value.lastIndexOf('/')) : '', chosen.name);
  });
  const form = h(
    'form',
    { class: 'upload-form', 'aria-label': 'Upload a file' },
    h('label', { for: 'upload-file' }, 'File (PDF, DOCX, HTML or text)'),
    file,
    h('label', { for: 'upload-path' }, 'Path'),
    path,
    h('div', { class: 'actions' }, submit, h('button', { type: 'button', class: 'secondary', onclick: () => hooks.onCancel() }, 'Cancel')),
    status,
  );
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const chosen = file.files?.[0];
    if (!chosen) return;
    submit.disabled = true;
    status.textContent = `Uploading ${chosen.name}…`;
    ctx.api.uploadFile(path.value.trim(), chosen).then(
      (item) => {
        ctx.notify({ text: `Uploaded ${item.path}.` });
        hooks.onUploaded(item);
      },
      (err: unknown) => {
        submit.disabled = false;
        status.textContent = describeError(err);
      },
    );
  });
  return form;
}
