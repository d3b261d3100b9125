import { ApiError } from './apiError.js';

/**
 * Item paths are a-z 0-9 - _ . / ; each segment is still encoded, never trusted. A `.` or `..` segment (a path typed
 * in the editor or the folder form) is refused with the server's own message: fetch resolves them (as `%2e` too)
 * before sending, so `docs/../plan.md` would reach `plan.md`, a path the admin never typed.
 */
export function encodePath(path: string): string {
  const segments = path.split('/');
  if (segments.some((s) => s === '.' || s === '..')) throw new ApiError(400, 'Invalid path: no segment may be empty or start with "."');
  return segments.map(encodeURIComponent).join('/');
}
