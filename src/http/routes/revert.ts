import Router from '@koa/router';
import { InvalidInput } from '../../domain/errors.js';
import { revertChanges, type RevertConflict, type RevertTarget } from '../../domain/revert.js';
import { formatEtag } from '../presenters.js';
import type { AppState } from '../state.js';
import type { RevertBody } from '../requestSchemas.js';
import { validateBody, validateQuery } from '../validation.js';
import { API_PREFIX, jsonBody, requirePermission, SMALL_BODY_BYTES, type RouteDeps } from './common.js';

/** `POST /revert {commitId} | {keyId, since}, force?`: undo one commit, or a key's changes since a time, as one new commit. */
export function revertRoutes(deps: Pick<RouteDeps, 'clock' | 'keys'>): Router<AppState> {
  const router = new Router<AppState>();

  router.post(`${API_PREFIX}/revert`, requirePermission('knowledge:admin'), jsonBody(SMALL_BODY_BYTES), async (ctx) => {
    validateQuery.none(ctx.query);
    const body = validateBody.revert(ctx.request.body);
    const { actor, repo } = ctx.state;
    const result = await revertChanges({ repo, actor, keys: deps.keys, target: targetOf(body), force: body.force ?? false, clock: deps.clock });
    ctx.body = { success: true, data: { commitId: result.commitId, reverted: result.reverted, conflicts: result.conflicts.map(presentConflict) } };
  });

  return router;
}

/** Exactly one of the two forms: a commit, or a key with a time. */
function targetOf(body: RevertBody): RevertTarget {
  const { commitId, keyId, since } = body;
  if (commitId !== undefined && keyId === undefined && since === undefined) return { commitId };
  if (commitId === undefined && keyId !== undefined && since !== undefined) return { keyId, since };
  throw new InvalidInput({ reason: 'give either commitId, or keyId and since (not both)' });
}

function presentConflict(c: RevertConflict): Record<string, unknown> {
  return { path: c.path, why: c.why, current: c.current && { version: c.current.version, etag: formatEtag(c.current.etag) } };
}
