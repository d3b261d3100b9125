import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { systemClock, type Clock } from '../common/clock.js';
import { secondsSince } from '../common/metrics.js';
import { readableEntry } from '../domain/itemReads.js';
import { authenticate, type Actor, type SecretHashes } from '../domain/keys.js';
import type { KeyStore } from '../storage/keys/keyStore.js';
import type { OrgRepo } from '../storage/repo/orgRepo.js';
import type { OrgStore } from '../storage/repo/orgStore.js';
import { presentedKey } from './middleware/auth.js';
import { COMPRESS_THRESHOLD_BYTES } from './middleware/compression.js';
import { pushRateLimitFields, type TokenBuckets } from './middleware/rateLimit.js';
import { noteRequest, requestIdOf, type RequestNotes } from './middleware/requestContext.js';
import { ItemAnswers, type ItemAnswer } from './itemAnswers.js';
import { standardHeaders } from './headers.js';
import { parseEtagCondition } from './presenters.js';
import { ITEM_ROUTE, ITEMS_PREFIX } from './routes/items.js';

/**
 * `GET /api/v1/knowledge/items/<path>` without a query, the API's most frequent request: its URL already in
 * the form the path rules allow (lowercase letters, digits, "-", "_", ".", "/"), so percent-decoding leaves it as it is.
 */
const PLAIN_ITEM_URL = new RegExp(`^${ITEMS_PREFIX}/[a-z0-9._/-]+$`);

export interface FastItemGetDeps {
  keys: KeyStore;
  orgs: OrgStore;
  clock?: Clock;
  /** The per-key rate limit's buckets, shared with Koa's middleware (undefined: no limit). */
  perKey: TokenBuckets | undefined;
  /** The access log and metrics, as Koa's requests tell them. */
  notes: RequestNotes;
  /** Hashes of keys seen lately, shared with Koa's key check. */
  hashes: SecretHashes;
  /** The bytes of item answers kept ready (ItemAnswers' default unless given). */
  answers?: ItemAnswers;
}

/**
 * The request handler: a successful read of an item (200, 304 or HEAD) answered here, everything else by Koa.
 *
 * Why: through Koa a GET costs about three times the CPU of a bare Koa answer (request context, compression,
 * the error envelope, the router, the JSON envelope, Koa's `respond`); README, Performance. Here the body and
 * its version headers come ready from ItemAnswers and go out with one `writeHead` and one `end`.
 *
 * Every answer is the one Koa would give, byte for byte bar the Date and a new request id
 * (test/http/fastItemGet.test.ts compares them). So that nothing is done twice, whatever is not a successful
 * read goes to Koa before anything with an effect happens here (a token spent, a line logged): a bad or missing
 * key (Koa counts failed attempts per address), an item not there or not readable, a query (version, ref), a
 * large answer the client would take compressed, a key out of quota (a refused take spends nothing). Koa then
 * does all of it itself and answers from the one error table. Only `noteUsed` of the key may then run twice
 * (it records a time: the same effect).
 */
export function withFastItemGet(deps: FastItemGetDeps, koa: RequestListener): RequestListener {
  const ready: ServeDeps = { ...deps, clock: deps.clock ?? systemClock, answers: deps.answers ?? new ItemAnswers() };
  return (req, res) => {
    const method = req.method;
    if ((method !== 'GET' && method !== 'HEAD') || !PLAIN_ITEM_URL.test(req.url ?? '')) {
      koa(req, res);
      return;
    }
    serve(ready, req, res).then(
      (served) => {
        if (!served) koa(req, res);
      },
      (err: unknown) => {
        // A fault before anything was written (the key file unreadable, say): Koa answers, and logs it when it recurs there.
        if (!res.headersSent) return koa(req, res);
        // After: the answer is out (or cut short, which the client sees); the fault is logged here.
        deps.notes.logger.error('fast GET failed after answering', { method, route: ITEM_ROUTE, error: err instanceof Error ? (err.stack ?? err.message) : String(err) });
        if (!res.writableEnded) res.destroy();
      },
    );
  };
}

type ServeDeps = Required<Omit<FastItemGetDeps, 'perKey'>> & Pick<FastItemGetDeps, 'perKey'>;

/** requestContext's standard header fields after the request id, as one flat list (writeHead's raw form). */
const STANDARD_AFTER_ID = Object.entries(standardHeaders('-')).flat().slice(2);

async function serve(deps: ServeDeps, req: IncomingMessage, res: ServerResponse): Promise<boolean> {
  const started = process.hrtime.bigint();
  const { headers } = req;
  const actor = await authenticate({ keys: deps.keys, secret: presentedKey(headers.authorization ?? '', headerText(headers['x-api-key'])), clock: deps.clock, hashes: deps.hashes });
  const lease = actor && (await deps.orgs.hold(actor.orgId));
  if (!actor || !lease) return false;
  try {
    return await answerItem(deps, req, res, { actor, repo: lease.repo, started });
  } finally {
    // The answer is written whole (a buffer) before this: nothing reads the repository after it.
    lease.release();
  }
}

async function answerItem(deps: ServeDeps, req: IncomingMessage, res: ServerResponse, args: { actor: Actor; repo: OrgRepo; started: bigint }): Promise<boolean> {
  const { actor, repo, started } = args;
  const { headers } = req;
  let answer: ItemAnswer;
  try {
    // req.url is prefix + path, checked above: no query, nothing percent-encoded.
    const entry = readableEntry({ repo, actor, path: (req.url as string).slice(ITEMS_PREFIX.length + 1) });
    answer = deps.answers.kept(actor.orgId, entry) ?? (await deps.answers.of(actor.orgId, repo, entry));
  } catch {
    return false; // not found, not readable, not a valid path...: Koa answers from the error table
  }
  const condition = parseEtagCondition(headerText(headers['if-none-match']));
  const notModified = condition !== undefined && (condition === '*' || condition.includes(answer.etag));
  // koa-compress compresses a large answer for a client that accepts any encoding: Koa's to make.
  if (!notModified && req.method === 'GET' && answer.bytes >= COMPRESS_THRESHOLD_BYTES && headers['accept-encoding'] !== undefined) return false;
  const requestId = requestIdOf(headerText(headers['x-request-id']) || undefined);
  // The order of Koa's answer: requestContext's standard headers, koa-compress's Vary, the rate limit, the route's ETag, Koa's body headers.
  const head = ['X-Request-Id', requestId, ...STANDARD_AFTER_ID, 'Vary', 'Accept-Encoding'];
  if (deps.perKey) {
    const { allowed, quota } = deps.perKey.take(actor.keyId);
    if (!allowed) return false; // Koa refuses it (429); a refused take spent nothing
    pushRateLimitFields(head, quota);
  }
  head.push('ETag', answer.etagHeader);
  const status = notModified ? 304 : 200;
  if (notModified) {
    res.writeHead(304, head);
    res.end();
  } else {
    head.push('Content-Type', 'application/json; charset=utf-8', 'Content-Length', answer.lengthHeader);
    res.writeHead(200, head);
    if (req.method === 'HEAD') res.end();
    else res.end(answer.body);
  }
  noteRequest(deps.notes, { method: req.method as string, route: ITEM_ROUTE, status, seconds: secondsSince(started) }, requestId, actor.keyId);
  return true;
}

/** A request header as Koa's `ctx.get` reads it: '' when absent (Node joins repeated ones). */
function headerText(value: string | string[] | undefined): string {
  if (value === undefined) return '';
  return Array.isArray(value) ? value.join(', ') : value;
}
