import { ancestorFolders } from '../../../domain/paths.js';
import { ORG_DEFAULTS, READ_REQUIREMENTS, WRITE_REQUIREMENTS } from '../../../domain/permissions.js';
import { describeError } from '../api.js';
import type { Ctx, Route, View } from '../context.js';
import { empty, errorBox, h, loading, replace, table, time } from '../dom.js';
import { formError, sendForm } from '../form.js';
import type { FolderRule } from '../types.js';

/** Folder rules: what `inherit` resolves to under a folder, viewed and edited. */
export function foldersView(ctx: Ctx, initial: Extract<Route, { name: 'folders' }>): View {
  let rules: FolderRule[] = [];
  const folder = h('input', { id: 'rule-folder', type: 'text', list: 'known-folders', autocomplete: 'off', spellcheck: 'false', placeholder: 'e.g. board or docs/internal', required: true });
  const known = h('datalist', { id: 'known-folders' });
  const read = h('select', { id: 'rule-read' }, READ_REQUIREMENTS.map((r) => h('option', { value: r }, r)));
  const write = h('select', { id: 'rule-write' }, WRITE_REQUIREMENTS.map((r) => h('option', { value: r }, r)));
  const formMessage = h('div', { role: 'alert', class: 'form-message' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Save rule');
  const list = h('div', { class: 'rules-body' });

  /** The form shows the folder's current rule as soon as a known folder is typed or chosen. */
  const fill = (): void => {
    const rule = rules.find((r) => r.folder === normalize(folder.value));
    read.value = rule?.requiredReadPermission ?? 'inherit';
    write.value = rule?.requiredWritePermission ?? 'inherit';
  };
  folder.addEventListener('input', fill);

  const form = h(
    'form',
    {
      class: 'rule-form inline-form',
      'aria-labelledby': 'rule-form-heading',
      novalidate: true,
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const name = normalize(folder.value);
        if (!name) return formError(formMessage, 'Name the folder, e.g. board or docs/internal.', folder);
        await sendForm(submit, formMessage, async () => {
          const saved = await ctx.api.setFolderRule(name, { requiredReadPermission: read.value, requiredWritePermission: write.value });
          const cleared = saved.requiredReadPermission === 'inherit' && saved.requiredWritePermission === 'inherit';
          ctx.notify(cleared ? `Removed the rule of ${name}/: its items use the rules above it.` : `Saved the rule of ${name}/.`);
          await load();
        });
      },
    },
    h('h2', { id: 'rule-form-heading' }, 'Edit a folder rule'),
    h(
      'div',
      { class: 'fields' },
      h('div', { class: 'field grow' }, h('label', { for: 'rule-folder' }, 'Folder'), folder, known),
      h('div', { class: 'field' }, h('label', { for: 'rule-read' }, 'Read requirement'), read),
      h('div', { class: 'field' }, h('label', { for: 'rule-write' }, 'Write requirement'), write),
      h('div', { class: 'field actions' }, submit),
    ),
    h('p', { class: 'help' }, 'Choose inherit for both to remove the rule.'),
    formMessage,
  );

  const edit = (rule: FolderRule): void => {
    folder.value = rule.folder;
    fill();
    folder.focus();
  };

  const el = h(
    'section',
    { class: 'page', 'aria-labelledby': 'folders-heading' },
    h('div', { class: 'page-head' }, h('h1', { id: 'folders-heading', tabindex: '-1' }, 'Folder rules'), h('button', { type: 'button', class: 'secondary small', onclick: () => void load() }, 'Refresh')),
    h(
      'p',
      { class: 'lead' },
      `An item whose requirement is inherit takes the rule of its nearest folder that has one, else the organization default (read: ${ORG_DEFAULTS.read}, write: ${ORG_DEFAULTS.write}). A change is in effect at once.`,
    ),
    form,
    h('h2', null, 'Folders with a rule'),
    list,
  );

  const load = async (): Promise<void> => {
    replace(list, loading('Loading folder rules…'));
    try {
      const [loaded, items] = await Promise.all([ctx.api.folders(), ctx.api.listItems().catch(() => [])]);
      rules = loaded;
      const names = new Set([...items.flatMap((i) => ancestorFolders(i.path)), ...rules.map((r) => r.folder)]);
      replace(known, [...names].sort().map((n) => h('option', { value: n })));
      if (rules.length === 0) {
        replace(list, empty('No folder has a rule: items that inherit use the organization defaults.'));
      } else {
        const rows = rules.map((r) => [
          h('code', { class: 'path' }, `${r.folder}/`),
          h('code', null, r.requiredReadPermission),
          h('code', null, r.requiredWritePermission),
          time(r.updatedAt, '—'),
          h('button', { type: 'button', class: 'secondary small', 'data-folder': r.folder, onclick: () => edit(r) }, 'Edit'),
        ]);
        replace(list, table('Folders with a rule', ['Folder', 'Read', 'Write', 'Updated', 'Actions'], rows, 'rules'));
      }
      if (folder.value) fill();
    } catch (err) {
      replace(list, errorBox(describeError(err), () => void load()));
    }
  };

  const select = (route: Extract<Route, { name: 'folders' }>): void => {
    if (route.folder) {
      folder.value = route.folder;
      fill();
    }
  };

  select(initial);
  void load();
  return {
    el,
    title: 'Folder rules',
    update(route) {
      if (route.name === 'folders') select(route);
    },
  };
}

const normalize = (value: string): string => value.trim().replace(/^\/+|\/+$/g, '');
