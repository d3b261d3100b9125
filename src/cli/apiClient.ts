import { ApiError, ConnectionFailed, UsageError } from './errors.js';

/**
 * A small client of the HTTP API for the `item` commands: one fetch per call, the key as a Bearer token,
 * the `{success, data | error}` envelope unwrapped. A refusal becomes an ApiError with the server's own
 * message; nothing answering becomes ConnectionFailed naming the URL it tried.
 */
interface ApiClientOptions {
  /** The server's base URL, e.g. http://127.0.0.1:3000 (a trailing slash is ignored). */
  url: string;
  key: string;
  fetch?: typeof fetch;
}

interface ApiCall {
  method?: 'GET' | 'PUT' | 'DELETE' | 'POST';
  /** Below /api/v1/knowledge: '' (the list), '/items/docs/a.md', '/search'... */
  path: string;
  query?: Record<string, string | undefined>;
  /** Sent as JSON. */
  body?: unknown;
  /**
   * Sent as they are, with their type (`item upload`), instead of `body`: bytes in memory, or a stream of `length`
   * bytes (a file), sent as it is read with its Content-Length, which the server refuses at once when it is too large.
   */
  bytes?: { data: Uint8Array; type: string } | { stream: ReadableStream<Uint8Array>; length: number; type: string };
  headers?: Record<string, string>;
  /** Aborts the request, and a stream's body with it (`item watch`'s idle timeout). */
  signal?: AbortSignal;
}

interface ApiAnswer<T> {
  status: number;
  etag: string | null;
  data: T;
}

export interface ApiClient {
  /** `data` of a successful answer, typed as the caller says the route answers (the API's documented shapes). */
  call<T>(call: ApiCall): Promise<ApiAnswer<T>>;
  /** A successful event stream's answer, its body unread (`item watch`); a refusal is thrown as `call` throws it. */
  stream(call: ApiCall): Promise<Response>;
  /** A successful answer of any type, its body unread (`item download`: a file's bytes); refusals as `call`. */
  download(call: ApiCall): Promise<Response>;
}

/** An item path as a URL path: each segment encoded, the slashes kept (`.` and `..` are refused by send). */
export const itemUrlPath = (path: string): string => path.split('/').map(encodeURIComponent).join('/');

export function createApiClient(options: ApiClientOptions): ApiClient {
  let base: URL;
  try {
    base = new URL(options.url.replace(/\/+$/, '') + '/api/v1/knowledge');
  } catch {
    throw new UsageError(`not a URL: "${options.url}" (set KNOWLEDGE_URL or --url, e.g. http://127.0.0.1:3000)`);
  }
  if (base.protocol !== 'http:' && base.protocol !== 'https:') throw new UsageError(`not an http(s) URL: "${options.url}"`);
  const doFetch = options.fetch ?? fetch;

  /** The request sent, as fetch answers it; nothing answering is ConnectionFailed. */
  const send = async (call: ApiCall, accept: string): Promise<{ res: Response; url: URL }> => {
    // A URL resolves `.` and `..` segments (as `%2e` too) before the request goes: `item rm docs/../plan.md` deleted
    // plan.md, a path never named. Refused for every path asked (items, folders, hook ids), before anything is sent;
    // the server takes no such path anyway. encodeURIComponent leaves dots alone and encodes `%`, so this sees them.
    if (call.path.split('/').some((s) => s === '.' || s === '..')) {
      throw new UsageError(`not a path the API takes: "${decodeURIComponent(call.path)}" (no segment may be . or ..)`);
    }
    const url = new URL(base.href + call.path);
    for (const [name, value] of Object.entries(call.query ?? {})) if (value !== undefined) url.searchParams.set(name, value);
    const headers: Record<string, string> = { Authorization: `Bearer ${options.key}`, Accept: accept, ...call.headers };
    let body: string | Uint8Array | ReadableStream<Uint8Array> | undefined;
    if (call.bytes !== undefined) {
      headers['Content-Type'] = call.bytes.type;
      if ('stream' in call.bytes) {
        body = call.bytes.stream;
        headers['Content-Length'] = String(call.bytes.length);
      } else body = call.bytes.data;
    } else if (call.body !== undefined) {
      body = JSON.stringify(call.body);
      headers['Content-Type'] = 'application/json';
    }
    try {
      // A stream body must say it is sent while the answer may already come (`duplex`); the server may refuse it early.
      const streaming = body instanceof ReadableStream ? { duplex: 'half' as const } : {};
      return { res: await doFetch(url, { method: call.method ?? 'GET', headers, body, signal: call.signal, ...streaming }), url };
    } catch (err) {
      throw new ConnectionFailed({ url: url.origin, reason: connectionReason(err) });
    }
  };

  /** A successful answer, its body unread; a refusal thrown as `call` throws it. */
  const unread = async (call: ApiCall, accept: string): Promise<{ res: Response; url: URL }> => {
    const { res, url } = await send(call, accept);
    if (!res.ok) throw refusal(res, url, await envelopeOf(res));
    return { res, url };
  };

  return {
    async call<T>(call: ApiCall): Promise<ApiAnswer<T>> {
      const { res, url } = await send(call, 'application/json');
      const envelope = await envelopeOf(res);
      if (!res.ok || envelope?.success !== true) throw refusal(res, url, envelope);
      return { status: res.status, etag: res.headers.get('etag'), data: envelope.data as T };
    },
    async stream(call: ApiCall): Promise<Response> {
      const { res, url } = await unread(call, 'text/event-stream');
      // Something else answering at the URL (a proxy's page, another server) would otherwise be read as a silent stream.
      if (!(res.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
        await res.body?.cancel();
        throw new ApiError({ status: res.status, url: `${url.origin}${url.pathname}`, message: `unexpected answer ${res.status}, ${res.headers.get('content-type') ?? 'no content type'} (not the knowledge store's event stream?)` });
      }
      return res;
    },
    async download(call: ApiCall): Promise<Response> {
      return (await unread(call, '*/*')).res;
    },
  };
}

type Envelope = { success?: unknown; data?: unknown; error?: unknown } | undefined;

/** The answer's `{success, data | error}`, or undefined when it is not JSON (not the knowledge store's API?). */
async function envelopeOf(res: Response): Promise<Envelope> {
  const text = await res.text();
  try {
    return JSON.parse(text) as Envelope;
  } catch {
    return undefined;
  }
}

/** A refusal as the CLI reports it: the server's own message (and the operation a commit refused). */
function refusal(res: Response, url: URL, envelope: Envelope): ApiError {
  const message = typeof envelope?.error === 'string' ? envelope.error : `unexpected answer ${res.status} ${res.statusText} (not the knowledge store's API?)`;
  const failed = (envelope?.data as { failedOperation?: unknown } | undefined)?.failedOperation;
  return new ApiError({ status: res.status, url: `${url.origin}${url.pathname}`, message, ...(typeof failed === 'number' ? { failedOperation: failed } : {}) });
}

/** Why fetch failed, from undici's cause: "connection refused (ECONNREFUSED)" rather than "fetch failed". */
function connectionReason(err: unknown): string {
  const cause = err instanceof Error ? (err as Error & { cause?: unknown }).cause : undefined;
  const code = typeof cause === 'object' && cause !== null && 'code' in cause ? String((cause as { code: unknown }).code) : undefined;
  const known: Record<string, string> = {
    ECONNREFUSED: 'connection refused: is the server running?',
    ENOTFOUND: 'unknown host',
    ECONNRESET: 'connection reset',
    ETIMEDOUT: 'timed out',
  };
  if (code) return `${known[code] ?? (cause instanceof Error ? cause.message : 'failed')} (${code})`;
  return cause instanceof Error ? cause.message : err instanceof Error ? err.message : String(err);
}
