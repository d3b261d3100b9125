import { randomUUID } from 'node:crypto';

/**
 * What every response carries, also those Node's HTTP layer answers before
 * Koa: a request id to quote in a report, no MIME sniffing, no caching (item
 * content is private to the key that read it).
 */
export function standardHeaders(requestId: string = randomUUID()): Record<string, string> {
  return { 'X-Request-Id': requestId, 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'no-store' };
}
