import { Api, ApiError } from '../api.js';
import type { Notice, View } from '../context.js';
import { h, replace } from '../dom.js';

/**
 * Sign-in with an admin API key. `GET /keys` answers 200 only for admin keys
 * (403 for reader and writer keys, 401 for unknown or revoked ones), so it is the check.
 */
export function signInView(options: { message?: Notice; onSignedIn: (key: string, org: string) => void }): View {
  const input = h('input', {
    id: 'api-key',
    name: 'api-key',
    type: 'password',
    autocomplete: 'off',
    spellcheck: 'false',
    autocapitalize: 'off',
    required: true,
    'aria-describedby': 'api-key-help',
  });
  const button = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
  const message = h('div', { class: 'signin-message', role: 'alert' });
  if (options.message) {
    replace(message, h('p', { class: options.message.kind === 'error' ? 'error-text' : 'ok-text' }, options.message.text));
  }

  const refuse = (text: string): void => {
    replace(message, h('p', { class: 'error-text' }, text));
    input.setAttribute('aria-invalid', 'true');
    input.focus();
    input.select();
  };

  const form = h(
    'form',
    {
      class: 'signin',
      novalidate: true,
      onsubmit: async (event: Event) => {
        event.preventDefault();
        const key = input.value.trim();
        if (!key) return refuse('Enter an admin API key.');
        button.disabled = true;
        replace(message, h('p', { class: 'muted', role: 'status' }, 'Checking the key…'));
        try {
          const keys = await new Api(key).keys();
          input.value = '';
          options.onSignedIn(key, keys[0]?.organizationId ?? '');
        } catch (err) {
          if (err instanceof ApiError && err.status === 403 && /scoped key/.test(err.message)) {
            refuse('This admin key is scoped to some folders. The dashboard manages the whole organization: sign in with an admin key without scopes.');
          } else if (err instanceof ApiError && err.status === 403) {
            refuse('This key is not an admin key. The dashboard needs a key with the admin role; reader and writer keys are refused.');
          } else if (err instanceof ApiError && err.status === 401) {
            refuse('The server does not accept this key: it is unknown or has been revoked.');
          } else if (err instanceof ApiError && err.status === 0) {
            refuse(err.message);
          } else {
            refuse(`The key could not be checked: ${err instanceof Error ? err.message : String(err)}`);
          }
        } finally {
          button.disabled = false;
        }
      },
    },
    h('h1', { tabindex: '-1' }, 'Knowledge store admin'),
    h('p', null, 'Sign in with an admin API key of your organization to manage items, history, the trash, keys and folder rules.'),
    h('label', { for: 'api-key' }, 'Admin API key'),
    input,
    h(
      'p',
      { id: 'api-key-help', class: 'help' },
      'The key starts with ks_ and your organization (ks_acme_…; older keys: ks_ alone). It is kept in this browser tab only (session storage) and removed when you sign out or close the tab.',
    ),
    button,
    message,
  );
  return { el: h('div', { class: 'signin-page' }, form), title: 'Sign in' };
}
