import { ApiError } from './apiError.js';
import { encodePath } from './urlPath.js';
import type { ApiKey, FolderRule, Item, RevertOutcome, SearchPage, Tagged, TrashItem, Version } from './types.js';

export { ApiError, encodePath };

const BASE = '/api/v1/knowledge';

/**
 * The admin API over same-origin fetch, with the key as a Bearer token.
 * Every answer is the `{success, data|error}` envelope; anything else is an error in words.
 */
export class Api {
  constructor(
    private readonly key: string,
    /** Called before a 401 is thrown: the key is no longer valid (revoked, or the data dir changed). */
    private readonly onUnauthorized: (err: ApiError) => void = () => {},
  ) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    return (await this.send<T>(method, path, body)).data;
  }

  /** A call whose request carries extra headers (If-Match) and whose answer's headers are wanted (ETag). */
  async send<T>(method: string, path: string, body?: unknown, extra: Record<string, string> = {}): Promise<{ data: T; headers: Headers }> {
    const headers: Record<string, string> = { ...extra, Authorization: `Bearer ${this.key}`, Accept: 'application/json' };
    // A form (a file upload) sets its own multipart Content-Type with the boundary.
    const form = body instanceof FormData;
    if (body !== undefined && !form) headers['Content-Type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${BASE}${path}`, {
        method,
        headers,
        body: body === undefined ? undefined : form ? body : JSON.stringify(body),
        cache: 'no-store',
        credentials: 'omit',
        redirect: 'error',
      });
    } catch {
      throw new ApiError(0, 'Cannot reach the server. Check that it is running and try again.');
    }
    let envelope: { success?: unknown; data?: unknown; error?: unknown } | undefined;
    try {
      envelope = (await res.json()) as typeof envelope;
    } catch {
      envelope = undefined;
    }
    if (!res.ok || envelope?.success !== true) {
      const message = typeof envelope?.error === 'string' ? envelope.error : `Unexpected answer from the server (HTTP ${res.status})`;
      const err = new ApiError(res.ok ? 502 : res.status, message);
      if (res.status === 401) this.onUnauthorized(err);
      throw err;
    }
    return { data: envelope.data as T, headers: res.headers };
  }

  /** Every live item, without content, following the cursor to the end. */
  async listItems(): Promise<Item[]> {
    const items: Item[] = [];
    let cursor: string | null | undefined;
    do {
      const query = new URLSearchParams({ content: 'false', limit: '1000' });
      if (cursor) query.set('cursor', cursor);
      const data = await this.call<{ items: Item[]; nextCursor?: string | null }>('GET', `?${query}`);
      items.push(...data.items);
      cursor = data.nextCursor;
    } while (cursor);
    return items;
  }

  async getItem(path: string, version?: number): Promise<Item> {
    const query = version === undefined ? '' : `?version=${version}`;
    return (await this.call<{ item: Item }>('GET', `/items/${encodePath(path)}${query}`)).item;
  }

  /** Uploads a file as the item at `path` (multipart, one part named "file"; its name is the file's). */
  async uploadFile(path: string, file: File): Promise<Item> {
    const form = new FormData();
    form.append('file', file, file.name);
    return (await this.call<{ item: Item }>('PUT', `/files/${encodePath(path)}`, form)).item;
  }

  /** A file item's original bytes (the key travels as a header, so a plain link cannot fetch them). */
  async downloadFile(path: string): Promise<Blob> {
    let res: Response;
    try {
      res = await fetch(`${BASE}/files/${encodePath(path)}`, { headers: { Authorization: `Bearer ${this.key}` }, cache: 'no-store', credentials: 'omit', redirect: 'error' });
    } catch {
      throw new ApiError(0, 'Cannot reach the server. Check that it is running and try again.');
    }
    if (res.ok) return res.blob();
    const envelope = (await res.json().catch(() => undefined)) as { error?: unknown } | undefined;
    throw new ApiError(res.status, typeof envelope?.error === 'string' ? envelope.error : `Unexpected answer from the server (HTTP ${res.status})`);
  }

  /** The item with its ETag, the version an edit is based on. */
  async getTagged(path: string): Promise<Tagged> {
    const { data, headers } = await this.send<{ item: Item }>('GET', `/items/${encodePath(path)}`);
    return { item: data.item, etag: headers.get('ETag') ?? '' };
  }

  /**
   * Saves an item only if nobody changed it since `etag` was read (If-Match), or, with `etag`
   * null, only if there is no item there yet (If-None-Match: *): a 412 otherwise, never a silent overwrite.
   */
  async saveItem(path: string, content: string, etag: string | null, message?: string): Promise<Tagged> {
    const condition: Record<string, string> = etag === null ? { 'If-None-Match': '*' } : { 'If-Match': etag };
    const body = message ? { content, message } : { content };
    const { data, headers } = await this.send<{ item: Item }>('PUT', `/items/${encodePath(path)}`, body, condition);
    return { item: data.item, etag: headers.get('ETag') ?? '' };
  }

  async moveItem(from: string, to: string, ifMatch?: string): Promise<Item> {
    return (await this.call<{ item: Item }>('POST', '/move', ifMatch ? { from, to, ifMatch } : { from, to })).item;
  }

  /** `POST /revert`: one commit, or a key's changes since a time; conflicts are left alone unless `force`. */
  revert(target: { commitId: string } | { keyId: string; since: string }, force = false): Promise<RevertOutcome> {
    return this.call<RevertOutcome>('POST', '/revert', force ? { ...target, force } : target);
  }

  deleteItem(path: string): Promise<unknown> {
    return this.call('DELETE', `/items/${encodePath(path)}`);
  }

  /** One page of full-text search results, best first; `prefix` is a folder ending in "/". */
  search(q: string, options: { prefix?: string; cursor?: string; limit?: number } = {}): Promise<SearchPage> {
    const query = new URLSearchParams({ q });
    if (options.prefix) query.set('prefix', options.prefix);
    if (options.limit !== undefined) query.set('limit', String(options.limit));
    if (options.cursor) query.set('cursor', options.cursor);
    return this.call<SearchPage>('GET', `/search?${query}`);
  }

  async history(path: string): Promise<Version[]> {
    return (await this.call<{ versions: Version[] }>('GET', `/history/${encodePath(path)}`)).versions;
  }

  async diff(path: string, from: number, to: number): Promise<string> {
    return (await this.call<{ diff: string }>('GET', `/diff/${encodePath(path)}?from=${from}&to=${to}`)).diff;
  }

  async rollback(path: string, version: number): Promise<Item> {
    return (await this.call<{ item: Item }>('POST', '/rollback', { path, version })).item;
  }

  async trash(): Promise<TrashItem[]> {
    return (await this.call<{ items: TrashItem[] }>('GET', '/trash')).items;
  }

  async restore(path: string): Promise<Item> {
    return (await this.call<{ item: Item }>('POST', '/trash/restore', { path })).item;
  }

  purge(path: string): Promise<unknown> {
    return this.call('DELETE', `/trash/items/${encodePath(path)}`);
  }

  async keys(): Promise<ApiKey[]> {
    return (await this.call<{ keys: ApiKey[] }>('GET', '/keys')).keys;
  }

  /** `scopes` empty: a key for the whole organization (the field is left out). */
  createKey(name: string, role: string, scopes: readonly string[] = []): Promise<{ key: ApiKey; secret: string }> {
    return this.call('POST', '/keys', scopes.length > 0 ? { name, role, scopes } : { name, role });
  }

  async revokeKey(id: string): Promise<ApiKey> {
    return (await this.call<{ key: ApiKey }>('DELETE', `/keys/${encodeURIComponent(id)}`)).key;
  }

  async folders(): Promise<FolderRule[]> {
    return (await this.call<{ folders: FolderRule[] }>('GET', '/folders')).folders;
  }

  async setFolderRule(folder: string, rule: { requiredReadPermission: string; requiredWritePermission: string }): Promise<FolderRule> {
    return (await this.call<{ folder: FolderRule }>('PUT', `/folders/${encodePath(folder)}`, rule)).folder;
  }
}

/** An error in words for the person looking at the page. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) {
    switch (err.status) {
      case 0:
        return err.message;
      case 401:
        return `The server refused the key (401 ${err.message}).`;
      case 403:
        return `Not allowed (403): ${err.message}.`;
      case 404:
        return `Not found (404): ${err.message}.`;
      case 409:
        return `Conflict (409): ${err.message}.`;
      case 412:
        return `Changed meanwhile (412): ${err.message}.`;
      case 503:
        return `The server is busy (503): ${err.message}`;
      default:
        return err.status >= 500 ? `The server failed (${err.status}): ${err.message}.` : `Refused (${err.status}): ${err.message}.`;
    }
  }
  return `Something went wrong in the page: ${err instanceof Error ? err.message : String(err)}`;
}
