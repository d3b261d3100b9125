import { InvalidPath } from './errors.js';

/**
 * Item path rules (see README, Paths), on every operation. Each rule has its
 * own message so a client learns exactly what to fix. A segment may not start
 * with "." — that reserves `.trash/`, `.knowledge/` and `.git` for the store.
 */
export const MAX_PATH_LENGTH = 255;
export const MAX_DIRECTORY_DEPTH = 5;

const ALLOWED = /^[a-z0-9\-_/.]*$/;
const EXTENSION = /\.[a-z0-9]+$/;

/**
 * Names Windows reserves for devices, whatever follows the first "." (`con.md`, `nul.tar.gz`
 * and the folder `aux/` all name the device): a clone on Windows cannot create them, and git
 * for Windows refuses to check them out. COM0 and LPT0 are reserved as well on current Windows.
 */
const WINDOWS_DEVICE = /^(con|prn|aux|nul|com[0-9]|lpt[0-9])$/;

/**
 * The rules for one segment beyond the character set and the leading ".", shared by item paths
 * and folders: each protects a backup cloned somewhere other than Linux.
 * - A trailing "." is stripped by Windows (`a./x.md` and `a/x.md` would be one folder there).
 * - A device name cannot be a file or a folder on Windows.
 * - A leading "-" is read as an option by the shell tools an admin points at a clone (`rm -rf.md`).
 */
function segmentRule(segment: string): string | undefined {
  if (segment.endsWith('.')) return 'no segment may end with "."';
  if (segment.startsWith('-')) return 'no segment may start with "-"';
  if (WINDOWS_DEVICE.test(segment.split('.')[0] ?? '')) return 'no segment may be a Windows device name (con, prn, aux, nul, com0-com9, lpt0-lpt9)';
  return undefined;
}

/**
 * A path every rule below accepts, as one pattern: up to MAX_DIRECTORY_DEPTH folders and a file name with an
 * extension; each segment starts with a letter, digit or "_", does not end with ".", and is no device name.
 * Most paths asked for are such paths: one test instead of the rules one by one (about a microsecond and a half
 * of a GET, split and closures). It only ever accepts what the rules accept (test/domain/paths.test.ts checks
 * that on random paths); anything else goes through the rules, which say what is wrong.
 */
const SEGMENT_START = '(?!(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:[./]|$))[a-z0-9_]';
const PLAIN_PATH = new RegExp(
  `^(?:${SEGMENT_START}(?:[a-z0-9_.-]*[a-z0-9_-])?/){0,${MAX_DIRECTORY_DEPTH}}${SEGMENT_START}[a-z0-9_.-]*\\.[a-z0-9]+$`,
);

/** True for a path of PLAIN_PATH's shape (which every rule accepts). */
export function isPlainPath(path: string): boolean {
  return path.length <= MAX_PATH_LENGTH && PLAIN_PATH.test(path);
}

export function validatePath(path: string): string {
  return isPlainPath(path) ? path : checkPathRules(path);
}

/** The path rules one by one, the first one broken thrown with its own message. */
export function checkPathRules(path: string): string {
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
  for (const segment of segments) {
    const rule = segmentRule(segment);
    if (rule) fail(rule);
  }
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
  for (const segment of segments) {
    const rule = segmentRule(segment);
    if (rule) fail(rule);
  }
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
