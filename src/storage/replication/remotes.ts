import { hideCredentials } from '../../common/redact.js';

/** `{org}` in a remote URL is replaced by the organization's id. */
export const ORG_PLACEHOLDER = '{org}';

/** One configured mirror: for one organization, or (org null) for every one, with `{org}` in its URL. */
export interface RemoteSetting {
  org: string | null;
  url: string;
}

/** How replication runs (KNOWLEDGE_REPLICATE and its companions, see README "Scaling"). */
export interface ReplicationSettings {
  remotes: readonly RemoteSetting[];
  /** A push still running after this long is killed and counts as failed. */
  timeoutMs: number;
  /** The pause after the first failure; it doubles with each failure in a row, up to `retryMaxMs`. */
  retryBaseMs: number;
  retryMaxMs: number;
  /** The least time between the starts of two pushes to one mirror: commits meanwhile go in one push. */
  intervalMs: number;
  /** Pushes running at once across organizations and remotes (each is a C git process). */
  concurrency: number;
}

const SCHEMES = ['git:', 'http:', 'https:', 'ssh:', 'file:'];

/**
 * Why `url` cannot be a mirror, or null when it can: git://, http(s)://, ssh://, file:// URLs and
 * absolute paths. scp-like `host:path` and relative paths are refused: they mean different things
 * depending on where the server was started.
 */
export function remoteUrlProblem(url: string): string | null {
  if (url.startsWith('/')) return /[\s\0]/.test(url) ? 'a path with spaces or control characters' : null;
  if (/^[^/:]+:(?!\/\/)/.test(url) && url.includes('@')) return 'an scp-like user@host:path; write ssh://user@host/path';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'not a URL or an absolute path';
  }
  if (!SCHEMES.includes(parsed.protocol)) return `the scheme ${parsed.protocol.slice(0, -1)} is not one of git, http, https, ssh, file`;
  if (parsed.protocol !== 'file:' && !parsed.hostname) return 'no host';
  if (/[\s\0]/.test(url)) return 'spaces or control characters';
  return null;
}

/**
 * Parses `[org=]url` entries separated by commas or whitespace. An entry without `org=` is for every
 * organization and must name it with `{org}` (two organizations pushing to one mirror would refuse each
 * other's history). Throws an Error whose message says which entry is wrong and why.
 */
export function parseRemotes(raw: string): RemoteSetting[] {
  const remotes: RemoteSetting[] = [];
  for (const entry of raw.split(/[\s,]+/).filter(Boolean)) {
    const named = /^([a-z0-9][a-z0-9-]{0,62})=(.*)$/.exec(entry);
    const org = named ? (named[1] as string) : null;
    const url = named ? (named[2] as string) : entry;
    const shown = redactUrl(url);
    const problem = remoteUrlProblem(url.split(ORG_PLACEHOLDER).join('org'));
    if (problem) throw new Error(`"${shown}" is not a git remote URL (${problem}); use git://, http(s)://, ssh://, file:// or an absolute path`);
    if (org === null && !url.includes(ORG_PLACEHOLDER)) {
      throw new Error(`"${shown}" is for every organization but has no ${ORG_PLACEHOLDER} in it; add ${ORG_PLACEHOLDER}, or write <org>=${shown} for one organization`);
    }
    if (remotes.some((r) => r.org === org && r.url === url)) throw new Error(`"${shown}" is listed twice`);
    remotes.push({ org, url });
  }
  return remotes;
}

/** The mirrors of one organization, `{org}` filled in. */
export function remotesOf(settings: Pick<ReplicationSettings, 'remotes'>, orgId: string): string[] {
  const urls = settings.remotes.filter((r) => r.org === null || r.org === orgId).map((r) => r.url.split(ORG_PLACEHOLDER).join(orgId));
  return [...new Set(urls)];
}

/** `url` with any `user:password@` hidden: what status answers and logs show. */
export function redactUrl(url: string): string {
  return hideCredentials(url, url);
}
