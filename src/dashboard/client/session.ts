/**
 * The admin key lives in this tab's sessionStorage only: never in
 * localStorage or a cookie, gone when the tab closes or the admin signs out.
 */
const KEY = 'knowledge-store.adminKey';

export const session = {
  get(): string | null {
    try {
      return sessionStorage.getItem(KEY);
    } catch {
      return null;
    }
  },
  set(key: string): void {
    sessionStorage.setItem(KEY, key);
  },
  clear(): void {
    try {
      sessionStorage.removeItem(KEY);
    } catch {
      // storage disabled: nothing was kept
    }
  },
};
