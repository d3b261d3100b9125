import type { Api } from './api.js';

/** Where the page is: parsed from the URL hash, so that Back, Forward and reload work. */
export type Route =
  | { name: 'signin' }
  | { name: 'items'; path?: string }
  | { name: 'trash' }
  | { name: 'keys' }
  | { name: 'folders'; folder?: string };

export interface Notice {
  text: string;
  kind?: 'ok' | 'error';
  link?: { href: string; label: string };
  /** Survive the navigation the action makes itself. */
  keep?: boolean;
}

/** What every view gets from the shell: the signed-in API and a way to say what happened. */
export interface Ctx {
  api: Api;
  org: string;
  notify(notice: Notice | string): void;
  navigate(hash: string): void;
}

/** A mounted screen. `update` takes a new route of the same screen without rebuilding it. */
export interface View {
  el: HTMLElement;
  title: string;
  update?(route: Route): void;
}

export function parseRoute(hash: string): Route | undefined {
  const raw = hash.replace(/^#/, '');
  const [section = '', ...rest] = raw.replace(/^\//, '').split('/');
  let tail: string;
  try {
    tail = decodeURIComponent(rest.join('/'));
  } catch {
    tail = '';
  }
  switch (section) {
    case 'signin':
      return { name: 'signin' };
    case 'items':
      return tail ? { name: 'items', path: tail } : { name: 'items' };
    case 'trash':
      return { name: 'trash' };
    case 'keys':
      return { name: 'keys' };
    case 'folders':
      return tail ? { name: 'folders', folder: tail } : { name: 'folders' };
    default:
      return undefined;
  }
}
