import Router from '@koa/router';
import type { EventFeed } from '../../domain/events.js';
import type { StreamHost } from '../events/streamHost.js';
import { TooManyStreams } from '../httpErrors.js';
import type { EventStreams, EventStreamSettings } from '../events/streamLimits.js';
import type { AppState } from '../state.js';
import { validateQuery } from '../validation.js';
import { API_PREFIX, type RouteDeps } from './common.js';

/** What GET /events needs besides the common route dependencies. */
export interface EventDeps {
  feed: EventFeed;
  streams: EventStreams;
  settings: EventStreamSettings;
  /** Who writes the streams once started: the fan-out process under `serve`, this process by default. */
  host: StreamHost;
}

/**
 * `GET /events`: Server-Sent Events, one per commit, as the key sees it (see sseStream.ts). Every refusal
 * (bad key, unknown `since`, too many streams) is an ordinary JSON answer, given before the stream starts:
 * this process authenticates, authorizes, counts and starts every stream, whoever writes it afterwards.
 */
export function eventRoutes(deps: RouteDeps & { events: EventDeps }): Router<AppState> {
  const router = new Router<AppState>();
  const { feed, streams, host } = deps.events;

  router.get(`${API_PREFIX}/events`, async (ctx) => {
    const { since } = validateQuery.events(ctx.query);
    const { actor, repo } = ctx.state;
    // EventSource resends the last id it got as Last-Event-ID when it reconnects: that wins over the URL's `since`.
    const cursor = feed.start({ repo, actor, since: ctx.get('Last-Event-ID') || since });
    // HEAD has the stream's headers and no body: there is nothing to hold open.
    if (ctx.method === 'HEAD') {
      ctx.status = 200;
      ctx.type = 'text/event-stream';
      return;
    }
    let end: () => void = () => undefined;
    const release = await acquire(() => streams.acquire(actor, () => end()), host);
    ctx.status = 200; // for the access log: Koa does not answer this request, the stream does
    ctx.respond = false;
    try {
      await host.serve({
        res: ctx.res,
        repo,
        actor,
        cursor,
        requestId: ctx.state.requestId,
        keyValid: async () => {
          const key = await deps.keys.get(actor.keyId);
          return key !== undefined && key.revokedAt === null;
        },
        register: (ender) => {
          end = ender;
          return release;
        },
      });
    } catch (err) {
      // The status line is gone: no envelope can follow. The client sees the stream break and resumes.
      release();
      deps.logger.error('event stream failed', { requestId: ctx.state.requestId, error: String(err) });
      ctx.res.destroy();
    }
  });

  return router;
}

/**
 * A stream's slot, or 429. A client that closed a stream and opens another at once (EventSource reconnecting,
 * a test) finds its old slot free: when the limit is reached, the host that holds the sockets is asked first
 * to release the streams of clients already gone (the fan-out process notices them a hop later than this
 * process would), and the limit is looked at again.
 */
async function acquire(take: () => () => void, host: StreamHost): Promise<() => void> {
  try {
    return take();
  } catch (err) {
    if (!(err instanceof TooManyStreams)) throw err;
    await host.settle();
    return take();
  }
}
