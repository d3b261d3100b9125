import { KnowledgeError } from '../common/errors.js';

/** Errors that only exist at the HTTP edge; the domain never throws these. */
export class Unauthorized extends KnowledgeError<Record<string, never>> {
  constructor() {
    super('UNAUTHORIZED', 'missing, unknown or revoked API key', {});
  }
}

export class RouteNotFound extends KnowledgeError<{ method: string; path: string }> {
  constructor(data: { method: string; path: string }) {
    super('ROUTE_NOT_FOUND', `no route for ${data.method} ${data.path}`, data);
  }
}

export class UnsupportedMediaType extends KnowledgeError<{ contentType: string }> {
  constructor(data: { contentType: string }) {
    super('UNSUPPORTED_MEDIA_TYPE', `body is ${data.contentType || 'not declared'}, not JSON`, data);
  }
}

/** A method the route does not answer, known to HTTP or not (a known route answers 405, an unknown one 404). */
export class MethodNotAllowed extends KnowledgeError<{ allow?: readonly string[] }> {
  /** `allow`: the methods the route answers, when the thrower knows them (the answer's Allow header). */
  constructor(data: { allow?: readonly string[] } = {}) {
    super('METHOD_NOT_ALLOWED', 'method not allowed on this route', data);
  }
}

/** Git over HTTP without credentials: 401 with a Basic challenge, so git asks for (or reports) them. */
export class GitAuthRequired extends KnowledgeError<Record<string, never>> {
  constructor() {
    super('GIT_AUTH_REQUIRED', 'git access needs an admin API key as the HTTP Basic password', {});
  }
}

/** Pushes are refused: the repository changes only through the API. */
export class GitPushRefused extends KnowledgeError<Record<string, never>> {
  constructor() {
    super('GIT_PUSH_REFUSED', 'the repository is read-only over git', {});
  }
}

/** What a rate limit leaves a client: the RateLimit header fields, and how long to wait when nothing is left. */
export interface RateQuota {
  /** The bucket's size: requests that may be sent at once. */
  limit: number;
  remaining: number;
  /** Seconds until the quota is whole again. */
  resetSeconds: number;
  /** Seconds until the next request is allowed (0 while some are left). */
  retryAfterSeconds: number;
}

/** Over a rate limit: the key sent too many requests, or the address failed authentication too often. */
export class TooManyRequests extends KnowledgeError<{ scope: 'key' | 'address'; quota: RateQuota }> {
  constructor(data: { scope: 'key' | 'address'; quota: RateQuota }) {
    super('TOO_MANY_REQUESTS', `rate limit per ${data.scope} exceeded`, data);
  }
}

/** A browser page of another site calling the MCP endpoint (DNS rebinding, a hostile page): refused before anything else. */
export class OriginRefused extends KnowledgeError<{ origin: string }> {
  constructor(data: { origin: string }) {
    super('ORIGIN_REFUSED', `Origin not allowed: ${data.origin}`, data);
  }
}

/** /metrics asked from elsewhere than this machine while the setting serves it locally only. */
export class MetricsRefused extends KnowledgeError<Record<string, never>> {
  constructor() {
    super('METRICS_REFUSED', 'metrics are served to this machine only', {});
  }
}

/** /metrics without the token the setting asks for. */
export class MetricsTokenRequired extends KnowledgeError<Record<string, never>> {
  constructor() {
    super('METRICS_TOKEN_REQUIRED', 'the metrics token is missing or wrong', {});
  }
}

/** /readyz while the server cannot serve: the reason is the answer. */
export class NotReady extends KnowledgeError<{ reason: string }> {
  constructor(data: { reason: string }) {
    super('NOT_READY', data.reason, data);
  }
}

/**
 * The server's port is taken. Raised before the data directory is touched, so a first start on a
 * busy port creates nothing (no organization, no admin key printed and lost) and the next start is a first start.
 */
export class PortInUse extends KnowledgeError<{ host: string; port: number }> {
  constructor(data: { host: string; port: number }) {
    super(
      'PORT_IN_USE',
      `Cannot listen on ${data.host}:${data.port}: the port is in use by another process. Stop it, or choose another port (PORT or --port). Nothing was created or changed.`,
      data,
    );
  }
}

/** A key's searches past its share of the server's time (KNOWLEDGE_SEARCH_MS_PER_KEY): its other requests still go. */
export class SearchTimeSpent extends KnowledgeError<{ quota: RateQuota }> {
  constructor(data: { quota: RateQuota }) {
    super('SEARCH_TIME_SPENT', 'search time per key exceeded', data);
  }
}

/** Past the number of event streams one key or one organization may hold open at once (see EventStreams). */
export class TooManyStreams extends KnowledgeError<{ scope: 'key' | 'organization'; limit: number }> {
  constructor(data: { scope: 'key' | 'organization'; limit: number }) {
    super('TOO_MANY_STREAMS', `too many event streams per ${data.scope}`, data);
  }
}
