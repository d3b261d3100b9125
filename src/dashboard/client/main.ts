import { Api, ApiError, describeError } from './api.js';
import { parseRoute, type Ctx, type Notice, type Route, type View } from './context.js';
import { errorBox, h, loading, replace } from './dom.js';
import { session } from './session.js';
import { foldersView } from './views/folders.js';
import { itemsView } from './views/items.js';
import { keysView } from './views/keys.js';
import { signInView } from './views/signIn.js';
import { trashView } from './views/trash.js';

/**
 * The shell: sign-in, the header with the sections, a notice line, and the
 * current screen, chosen by the URL hash (#/items/<path>, #/trash, #/keys, #/folders).
 */
const SECTIONS = [
  { name: 'items', label: 'Items', hash: '#/items' },
  { name: 'trash', label: 'Trash', hash: '#/trash' },
  { name: 'keys', label: 'Keys', hash: '#/keys' },
  { name: 'folders', label: 'Folder rules', hash: '#/folders' },
] as const;

const root = document.getElementById('app') as HTMLElement;

let signedIn: { ctx: Ctx; main: HTMLElement; notice: HTMLElement; nav: HTMLElement } | undefined;
let current: { name: Route['name']; view: View } | undefined;
/** How many more navigations the current notice stays for. */
let noticeKeep = 0;

function signOut(message?: Notice): void {
  session.clear();
  signedIn = undefined;
  current = undefined;
  showSignIn(message);
}

function showSignIn(message?: Notice, next = location.hash): void {
  if (!/^#\/signin\b/.test(location.hash)) history.replaceState(null, '', '#/signin');
  const view = signInView({
    message,
    onSignedIn: (key, org) => {
      session.set(key);
      startShell(key, org);
      const target = parseRoute(next);
      history.replaceState(null, '', target && target.name !== 'signin' ? next : '#/items');
      render();
    },
  });
  document.title = 'Sign in — Knowledge store admin';
  replace(root, view.el);
  view.el.querySelector<HTMLInputElement>('input')?.focus();
}

function startShell(key: string, org: string): void {
  const api = new Api(key, (err: ApiError) => {
    // Revoked meanwhile, or the server's data changed: the key is useless now.
    queueMicrotask(() => signOut({ kind: 'error', text: `${describeError(err)} It may have been revoked. Sign in again.` }));
  });
  const notice = h('div', { class: 'notice', role: 'status', 'aria-live': 'polite' });
  const main = h('main', { id: 'main', tabindex: '-1' });
  const nav = h(
    'nav',
    { class: 'sections', 'aria-label': 'Sections' },
    h(
      'ul',
      null,
      SECTIONS.map((s) => h('li', null, h('a', { href: s.hash, 'data-section': s.name }, s.label))),
    ),
  );
  const skip = h(
    'a',
    {
      class: 'skip',
      href: '#main',
      onclick: (e: Event) => {
        e.preventDefault();
        main.focus();
      },
    },
    'Skip to content',
  );
  const header = h(
    'header',
    { class: 'topbar' },
    h('div', { class: 'brand' }, h('span', { class: 'brand-name' }, 'Knowledge store'), h('span', { class: 'org' }, 'organization ', h('strong', null, org))),
    nav,
    h('button', { type: 'button', class: 'secondary sign-out', onclick: () => signOut({ text: 'Signed out. The key was removed from this tab.' }) }, 'Sign out'),
  );
  const ctx: Ctx = {
    api,
    org,
    notify: (n) => {
      const { text, kind = 'ok', link, keep = false } = typeof n === 'string' ? { text: n } : n;
      notice.className = `notice ${kind}`;
      replace(notice, h('p', null, text, link ? ' ' : null, link ? h('a', { href: link.href }, link.label) : null));
      // Cleared by the next navigation, unless the action itself navigates (delete -> back to the tree).
      noticeKeep = keep ? 1 : 0;
    },
    navigate: (hash) => {
      if (location.hash === hash) render();
      else location.hash = hash;
    },
  };
  signedIn = { ctx, main, notice, nav };
  replace(root, skip, header, notice, main);
}

function render(): void {
  if (!signedIn) return;
  const route = parseRoute(location.hash);
  if (!route || route.name === 'signin') {
    history.replaceState(null, '', '#/items');
    return render();
  }
  const { ctx, main, notice, nav } = signedIn;
  for (const link of nav.querySelectorAll('a')) {
    if (link.dataset.section === route.name) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (noticeKeep > 0) noticeKeep--;
  else replace(notice);
  if (current?.name === route.name && current.view.update) {
    current.view.update(route);
    document.title = `${current.view.title} — Knowledge store admin`;
    return;
  }
  const changedSection = current !== undefined && current.name !== route.name;
  const view =
    route.name === 'items'
      ? itemsView(ctx, route)
      : route.name === 'trash'
        ? trashView(ctx)
        : route.name === 'keys'
          ? keysView(ctx)
          : foldersView(ctx, route);
  current = { name: route.name, view };
  document.title = `${view.title} — Knowledge store admin`;
  replace(main, view.el);
  if (changedSection) view.el.querySelector<HTMLElement>('h1')?.focus();
}

/** A stored key is checked once on load: it must still be an admin key. */
async function boot(): Promise<void> {
  const key = session.get();
  if (!key) return showSignIn();
  replace(root, loading('Checking your key…'));
  try {
    const keys = await new Api(key).keys();
    startShell(key, keys[0]?.organizationId ?? '');
    render();
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 403)) {
      signOut({ kind: 'error', text: `${describeError(err)} Sign in with an admin key.` });
    } else {
      replace(root, errorBox(describeError(err), () => void boot()));
    }
  }
}

window.addEventListener('hashchange', () => {
  if (signedIn) render();
  else if (!/^#\/signin\b/.test(location.hash)) showSignIn(undefined, location.hash);
});
void boot();
