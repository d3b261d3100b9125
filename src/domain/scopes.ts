import { InvalidInput, ScopeRefused } from './errors.js';
import { validateFolderPrefix } from './paths.js';

/**
 * Key scopes (contract §9): a key may be limited to folders. A scoped key sees and touches only
 * items under them; everything else is absent for it. Scopes narrow a role, never widen it.
 *
 * A scope is a folder prefix with its trailing "/" ("docs/", "teams/a/"), stored sorted. A key
 * without scopes (`undefined`) reaches the whole organization, as every key made before scopes did.
 */
export const MAX_SCOPES = 50;

/** Who is limited by scopes: an Actor, a key record (structural, so this module needs neither). */
export interface Scoped {
  scopes?: readonly string[];
}

/**
 * Checks and normalises the scopes asked for: 1–50 folder paths, each under the folder rules of
 * item paths, given with or without the trailing "/"; none repeated, none inside another (which
 * would mean nothing, and hints at a mistake). Returns them sorted, each with its trailing "/".
 */
export function validateScopes(raw: readonly string[]): string[] {
  if (raw.length < 1 || raw.length > MAX_SCOPES) throw new InvalidInput({ reason: `scopes must hold 1 to ${MAX_SCOPES} folders` });
  const scopes = raw.map((s) => {
    if (typeof s !== 'string') throw new InvalidInput({ reason: 'each scope must be a folder path such as "docs/"' });
    try {
      return validateFolderPrefix(s.endsWith('/') ? s : `${s}/`);
    } catch (err) {
      const rule = err instanceof Error ? err.message.replace(/^Invalid path: /, '') : 'not a folder';
      throw new InvalidInput({ reason: `Invalid scope "${s}": ${rule}` });
    }
  });
  const sorted = [...scopes].sort();
  for (let i = 1; i < sorted.length; i++) {
    const [before, scope] = [sorted[i - 1] as string, sorted[i] as string];
    if (scope === before) throw new InvalidInput({ reason: `scope "${scope}" is given twice` });
    // Sorted, a scope inside another comes right after it or after others inside it too.
    const outer = sorted.slice(0, i).find((s) => scope.startsWith(s));
    if (outer) throw new InvalidInput({ reason: `scope "${scope}" is inside scope "${outer}": give the outer folder alone` });
  }
  return sorted;
}

/** The path (an item's, or a folder prefix ending in "/") lies under one of the scopes; always true without scopes. */
export function inScope(who: Scoped, path: string): boolean {
  return who.scopes === undefined || who.scopes.some((scope) => path.startsWith(scope));
}

/** Refuses a write to a path outside the scopes, decided on the path alone (it tells nothing of what is there). */
export function requireInScope(who: Scoped, path: string): void {
  if (!inScope(who, path)) throw new ScopeRefused({ reason: `${path} is outside this key's scopes (${(who.scopes ?? []).join(', ')})` });
}

/**
 * Refuses what reaches the whole organization at once (a clone, key management) to a scoped key:
 * no per-item filtering can make those narrower.
 */
export function requireUnscoped(who: Scoped, what: string): void {
  if (who.scopes !== undefined) throw new ScopeRefused({ reason: `a scoped key may not ${what}; use a key without scopes` });
}

/**
 * The folder prefixes a query must stay within: `prefix` narrowed by the scopes. `undefined`
 * means anywhere; an empty list means nowhere (the prefix lies outside every scope).
 */
export function scopedPrefixes(who: Scoped, prefix: string | undefined): string[] | undefined {
  if (who.scopes === undefined) return prefix === undefined ? undefined : [prefix];
  if (prefix === undefined) return [...who.scopes];
  if (inScope(who, prefix)) return [prefix];
  return who.scopes.filter((scope) => scope.startsWith(prefix));
}
