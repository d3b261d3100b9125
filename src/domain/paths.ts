import { InvalidPath } from './errors.js';

/**
 * Item path rules (spec "Limits", completed by contract §3). Each rule has its
 * own message so a client learns exactly what to fix. A segment may not start
 * with "." — that reserves `.trash/`, `.knowledge/` and `.git` for the store.
 */
export const MAX_PATH_LENGTH = 255;
export const MAX_DIRECTORY_DEPTH = 5;

const ALLOWED = /^[a-z0-9\-_/.]*$/;
const EXTENSION = /\.[a-z0-9]+$/;

export function validatePath(path: string): string {
  const fail = (rule: string): never => {
    throw new InvalidPath({ path, rule });
  };
  if (path.length === 0) fail('must not be empty');
  if (path.length > MAX_PATH_LENGTH) fail(`must be at most ${MAX_PATH_LENGTH} characters`);
  if (!ALLOWED.test(path)) fail('only lowercase letters, digits, "-", "_", "/" and "." are allowed');
  if (path.startsWith('/') || path.endsWith('/')) fail('must not start or end with "/"');
  const segments = path.split('/');
  if (segments.some((s) => s === '')) fail('must not contain an empty segment ("//")');
  if (segments.some((s) => s === '.' || s === '..')) fail('must not contain "." or ".." segments');
  if (segments.some((s) => s.startsWith('.'))) fail('no segment may start with "."');
  if (!EXTENSION.test(segments[segments.length - 1] ?? '')) fail('must end with a file extension');
  if (segments.length - 1 > MAX_DIRECTORY_DEPTH) fail(`at most ${MAX_DIRECTORY_DEPTH} directory levels`);
  return path;
}

/**
 * A folder prefix for listing: a valid folder path followed by "/". The folder
 * itself needs no extension, but otherwise obeys the same segment rules.
 */
export function validateFolderPrefix(prefix: string): string {
  const fail = (rule: string): never => {
    throw new InvalidPath({ path: prefix, rule });
  };
  if (!prefix.endsWith('/')) fail('a prefix must end with "/"');
  const folder = prefix.slice(0, -1);
  if (folder.length === 0 || folder.length >= MAX_PATH_LENGTH) fail('a prefix must name a folder');
  if (!ALLOWED.test(folder)) fail('only lowercase letters, digits, "-", "_", "/" and "." are allowed');
  const segments = folder.split('/');
  if (segments.some((s) => s === '' || s.startsWith('.'))) fail('no segment may be empty or start with "."');
  if (segments.length > MAX_DIRECTORY_DEPTH) fail(`at most ${MAX_DIRECTORY_DEPTH} directory levels`);
  return prefix;
}

/** Every ancestor folder of a path, nearest last: "a/b/c.md" -> ["a", "a/b"]. */
export function ancestorFolders(path: string): string[] {
  const parts = path.split('/');
  const out: string[] = [];
  for (let i = 1; i < parts.length; i++) out.push(parts.slice(0, i).join('/'));
  return out;
}
