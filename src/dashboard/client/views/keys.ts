import { ROLES, type Role } from '../../../domain/permissions.js';
import { describeError } from '../api.js';
import type { Ctx, View } from '../context.js';
import { confirmDialog } from '../dialog.js';
import { empty, errorBox, h, loading, replace, table, time } from '../dom.js';
import { formError, sendForm } from '../form.js';
import { revertOutcome } from '../revertOutcome.js';
import type { ApiKey } from '../types.js';

/** The organization's API keys: list, create (the secret shown once), revoke. */
export function keysView(ctx: Ctx): View {
  const list = h('div', { class: 'keys-body' });
  const created = h('div', { class: 'created-key' });
  /** What the last "undo this key's changes" did, with its conflicts. */
  const undone = h('div', { class: 'undo-result', 'aria-live': 'polite' });
  const name = h('input', { id: 'key-name', name: 'name', type: 'text', required: true, maxlength: '100', autocomplete: 'off', placeholder: 'e.g. research-agent' });
  const role = h('select', { id: 'key-role', name: 'role' }, (Object.keys(ROLES) as Role[]).map((r) => h('option', { value: r, selected: r === 'reader' }, r)));
  const scopes = h('input', {
    id: 'key-scopes',
    name: 'scopes',
    type: 'text',
    autocomplete: 'off',
    placeholder: 'all folders; or e.g. docs/ notes/',
    'aria-describedby': 'key-scopes-note',
  });
  const formMessage = h('div', { role: 'alert', class: 'form-message' });
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Create key');

  const form = h(
    'form',
    {
      class: 'create-key inline-form',
      'aria-labelledby': 'create-key-heading',
      novalidate: true,
      onsubmit: async (e: Event) => {
        e.preventDefault();
        const value = name.value.trim();
        if (!value) return formError(formMessage, 'Give the key a name (who or what will use it).', name);
        await sendForm(submit, formMessage, async () => {
          // Folders separated by spaces or commas; none: the whole organization.
          const folders = scopes.value.split(/[\s,]+/).filter((s) => s !== '');
          const { key, secret } = await ctx.api.createKey(value, role.value, folders);
          name.value = '';
          scopes.value = '';
          showSecret(key, secret);
          await load();
        });
      },
    },
    h('h2', { id: 'create-key-heading' }, 'Create a key'),
    h(
      'div',
      { class: 'fields' },
      h('div', { class: 'field grow' }, h('label', { for: 'key-name' }, 'Name'), name),
      h('div', { class: 'field' }, h('label', { for: 'key-role' }, 'Role'), role),
      h('div', { class: 'field grow' }, h('label', { for: 'key-scopes' }, 'Scopes (optional)'), scopes),
      h('div', { class: 'field actions' }, submit),
    ),
    h('p', { id: 'key-scopes-note', class: 'muted small' }, 'A scoped key sees and changes only items under its folders, and may not clone the repository or manage keys.'),
    formMessage,
  );

  const el = h(
    'section',
    { class: 'page', 'aria-labelledby': 'keys-heading' },
    h('div', { class: 'page-head' }, h('h1', { id: 'keys-heading', tabindex: '-1' }, 'API keys'), h('button', { type: 'button', class: 'secondary small', onclick: () => void load() }, 'Refresh')),
    h('p', { class: 'lead' }, 'Keys of this organization. Readers read; writers also write; admins also delete, restore and manage keys and folder rules. A revoked key is refused from its next request on.'),
    form,
    created,
    undone,
    h('h2', null, 'Keys'),
    list,
  );

  function showSecret(key: ApiKey, secret: string): void {
    const field = h('input', { id: 'new-key-secret', type: 'text', readonly: true, value: secret, spellcheck: 'false', 'aria-describedby': 'new-key-note' });
    const status = h('span', { class: 'copy-status', role: 'status' });
    const copy = async (): Promise<void> => {
      try {
        await navigator.clipboard.writeText(secret);
        status.textContent = 'Copied.';
      } catch {
        field.focus();
        field.select();
        status.textContent = 'Could not copy by itself: the key is selected, press Ctrl+C (⌘C) to copy it.';
      }
    };
    replace(
      created,
      h(
        'div',
        { class: 'secret-once', role: 'region', 'aria-label': 'New key secret' },
        h('h2', null, `New ${key.role} key “${key.name}”`),
        h('p', { id: 'new-key-note' }, h('strong', null, 'Copy it now: it is shown only once.'), ' Only its hash is stored, so it cannot be shown again.'),
        h('label', { for: 'new-key-secret' }, 'Secret'),
        h(
          'div',
          { class: 'secret-row' },
          field,
          h('button', { type: 'button', class: 'primary', onclick: () => void copy() }, 'Copy'),
          h('button', { type: 'button', class: 'secondary', onclick: () => replace(created) }, 'Done'),
        ),
        status,
      ),
    );
    field.focus();
    field.select();
  }

  const revoke = async (key: ApiKey): Promise<void> => {
    const ok = await confirmDialog({
      title: `Revoke the key “${key.name}”?`,
      body: [h('p', null, `Every client using this ${key.role} key (`, h('code', null, key.id), ') is refused from its next request. A revoked key cannot be turned back on.')],
      confirmLabel: 'Revoke key',
      danger: true,
    });
    if (!ok) return;
    try {
      await ctx.api.revokeKey(key.id);
      ctx.notify(`Revoked the key “${key.name}”.`);
      await load();
    } catch (err) {
      ctx.notify({ kind: 'error', text: `Revoke failed. ${describeError(err)}` });
    }
  };

  /**
   * "Undo this key's changes since…": the button for an agent that went wrong. One new commit takes
   * back everything the key changed from that time on; what others changed since is left alone and
   * listed, with a separate button to undo those too.
   */
  const undo = async (key: ApiKey): Promise<void> => {
    const hourAgo = new Date(Date.now() - 3_600_000);
    const field = h('input', { id: 'undo-since', type: 'datetime-local', step: '1', value: localInput(hourAgo) });
    const ok = await confirmDialog({
      title: `Undo the changes of “${key.name}”?`,
      body: [
        h('p', null, `Every change this key (`, h('code', null, key.id), ') made from the time below on is undone in one new commit. Created items go to the trash; nothing is lost.'),
        h('label', { for: 'undo-since' }, 'Since (your local time)'),
        field,
      ],
      confirmLabel: 'Undo changes',
      danger: true,
    });
    if (!ok) return;
    const since = new Date(field.value);
    if (Number.isNaN(since.getTime())) return ctx.notify({ kind: 'error', text: 'Give a date and time to undo from.' });
    await send(key, since.toISOString(), false);
  };

  const send = async (key: ApiKey, since: string, force: boolean): Promise<void> => {
    try {
      const result = await ctx.api.revert({ keyId: key.id, since }, force);
      replace(
        undone,
        h('h2', null, `Changes of “${key.name}” since ${since.slice(0, 19).replace('T', ' ')} UTC`),
        revertOutcome(result, () => void send(key, since, true)),
      );
    } catch (err) {
      ctx.notify({ kind: 'error', text: `Undo failed. ${describeError(err)}` });
    }
  };

  const load = async (): Promise<void> => {
    replace(list, loading('Loading keys…'));
    try {
      const keys = await ctx.api.keys();
      if (keys.length === 0) return replace(list, empty('This organization has no keys.'));
      const sorted = [...keys].sort((a, b) => Number(a.revokedAt !== null) - Number(b.revokedAt !== null) || a.createdAt.localeCompare(b.createdAt));
      const rows = sorted.map((k) => [
        h('span', { class: 'key-name' }, k.name),
        h('span', { class: `role role-${k.role}` }, k.role),
        k.scopes ? h('span', { class: 'key-scopes' }, k.scopes.map((s) => h('code', { class: 'small-code' }, s))) : h('span', { class: 'muted' }, 'all folders'),
        h('code', { class: 'small-code' }, k.id),
        time(k.createdAt),
        time(k.lastUsedAt, 'never'),
        k.revokedAt ? h('span', { class: 'status revoked' }, 'revoked ', time(k.revokedAt)) : h('span', { class: 'status active' }, 'active'),
        h(
          'span',
          { class: 'row-actions' },
          h('button', { type: 'button', class: 'secondary small', 'data-undo-key': k.id, onclick: () => void undo(k) }, 'Undo changes since…'),
          k.revokedAt ? null : h('button', { type: 'button', class: 'danger-outline small', 'data-key-id': k.id, onclick: () => void revoke(k) }, 'Revoke…'),
        ),
      ]);
      replace(list, table('API keys of this organization, active first', ['Name', 'Role', 'Scopes', 'Id', 'Created', 'Last used', 'Status', 'Actions'], rows, 'keys'));
    } catch (err) {
      replace(list, errorBox(describeError(err), () => void load()));
    }
  };

  void load();
  return { el, title: 'API keys' };
}

/** A time as a datetime-local input shows it: local, to the second. */
function localInput(d: Date): string {
  const pad = (n: number): string => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}
