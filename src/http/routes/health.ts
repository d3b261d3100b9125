import Router from '@koa/router';
import type { OrgStore } from '../../storage/repo/orgStore.js';
import { NotReady } from '../httpErrors.js';
import type { AppState } from '../state.js';

export const HEALTH_PATH = '/healthz';
export const READY_PATH = '/readyz';

/** How long a readiness verdict is reused: probes from several balancers cost one disk write a second. */
const READY_CACHE_MS = 1000;
/** How long a probe waits for organizations still being opened before it answers 503 (they keep opening). */
const OPEN_WAIT_MS = 2000;

export type Readiness = { ready: true } | { ready: false; reason: string };

/**
 * Whether the server can serve (contract §12): the data directory takes a write and fsync now, and every
 * organization has been opened (those beyond KNOWLEDGE_MAX_OPEN_ORGS may be closed again since). The verdict is cached for a second and shared by concurrent probes; opening the
 * organizations starts with the first probe and goes on in the background when it takes longer than a probe.
 */
export function readinessCheck(orgs: OrgStore, now: () => number = () => performance.now()): () => Promise<Readiness> {
  let cached: { at: number; verdict: Promise<Readiness> } | undefined;
  let opening: Promise<{ opened: number; failed: string[] }> | undefined;
  const check = async (): Promise<Readiness> => {
    try {
      await orgs.checkWritable();
    } catch (err) {
      const code = (err as { code?: unknown } | null)?.code;
      return { ready: false, reason: `The data directory is not writable${typeof code === 'string' ? ` (${code})` : ''}` };
    }
    opening ??= orgs.openAll();
    const current = opening;
    const result = await Promise.race([current, new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), OPEN_WAIT_MS).unref())]);
    if (!result) return { ready: false, reason: 'Organizations are still being opened' };
    // Organizations created since, or ones that failed, are tried again by the next check.
    if (current === opening) opening = undefined;
    if (result.failed.length > 0) return { ready: false, reason: `Organizations could not be opened: ${result.failed.join(', ')}` };
    return { ready: true };
  };
  return () => {
    const t = now();
    if (!cached || t - cached.at >= READY_CACHE_MS) cached = { at: t, verdict: check() };
    return cached.verdict;
  };
}

/** Probes for process managers and load balancers: no key, nothing about the data in the answer. */
export function healthRoutes(deps: { orgs: OrgStore }): Router<AppState> {
  const router = new Router<AppState>();
  const ready = readinessCheck(deps.orgs);

  // The process is up and its event loop turns: nothing else is looked at (a restart would not fix the disk).
  router.get(HEALTH_PATH, (ctx) => {
    ctx.body = { success: true };
  });

  router.get(READY_PATH, async (ctx) => {
    const verdict = await ready();
    if (!verdict.ready) throw new NotReady({ reason: verdict.reason });
    ctx.body = { success: true };
  });

  return router;
}
