import Router from '@koa/router';
import { isKnowledgeError } from '../../common/errors.js';
import { commitOperations, type Operation, type OperationResult } from '../../domain/commits.js';
import { OperationFailed } from '../../domain/errors.js';
import { etagConditionField, formatEtag, presentItem } from '../presenters.js';
import type { AppState } from '../state.js';
import type { OperationBody } from '../requestSchemas.js';
import { validateBody, validateQuery } from '../validation.js';
import { API_PREFIX, jsonBody, requirePermission, type RouteDeps } from './common.js';

/**
 * How much larger than one item's content limit a whole commit's body may be: 1000 operations at the
 * content limit each would be a gigabyte held in memory; eight contents' worth (8 MiB by default) holds
 * a thousand small notes or a few large ones, and is refused with 413 before it is read whole.
 */
const COMMIT_BODY_CONTENTS = 8;

/** `POST /commits {message?, operations}`: several item changes, all-or-nothing, as one commit. */
export function commitRoutes(deps: Pick<RouteDeps, 'clock' | 'maxContentBytes'>): Router<AppState> {
  const router = new Router<AppState>();
  const parseJson = jsonBody(COMMIT_BODY_CONTENTS * deps.maxContentBytes + 64 * 1024);

  router.post(`${API_PREFIX}/commits`, requirePermission('knowledge:write'), parseJson, async (ctx) => {
    validateQuery.none(ctx.query);
    const body = validateBody.commit(ctx.request.body);
    const operations = body.operations.map((op, index) => {
      try {
        return toOperation(validateBody.operation(op));
      } catch (cause) {
        if (isKnowledgeError(cause)) throw new OperationFailed({ index, cause });
        throw cause;
      }
    });
    const { actor, repo } = ctx.state;
    const { commitId, items } = await commitOperations({
      repo,
      actor,
      message: body.message,
      operations,
      maxContentBytes: deps.maxContentBytes,
      clock: deps.clock,
    });
    ctx.body = { success: true, data: { commitId, items: items.map((r) => present(actor.orgId, r)) } };
  });

  return router;
}

function toOperation(body: OperationBody): Operation {
  return body.op === 'delete' ? body : { ...body, ifMatch: etagConditionField(body.ifMatch, 'ifMatch') };
}

function present(orgId: string, r: OperationResult): Record<string, unknown> {
  if (r.op === 'delete') return { op: 'delete', path: r.path, deleted: true };
  const out = { op: r.op, item: presentItem(orgId, r.item), etag: formatEtag(r.item.etag) };
  return r.op === 'put' ? { ...out, changed: r.changed } : out;
}
