import { availableParallelism } from 'node:os';
import Router from '@koa/router';
import { Slots } from '../../common/slots.js';
import { getFile, putFile } from '../../domain/files.js';
import { API_PREFIX, pathAfter, requirePermission, type RouteDeps } from './common.js';
import { formatEtag, itemEnvelope, parseEtagCondition } from '../presenters.js';
import type { AppState } from '../state.js';
import { receiveUpload, refuseEarly } from '../uploadBody.js';
import { DownloadBudget } from '../fileDownloads.js';
import { validateQuery } from '../validation.js';

const FILES_PREFIX = `${API_PREFIX}/files`;

/** Uploads held in memory at once, from body to commit (see Slots); two per core keeps extraction busy. */
const UPLOADS_IN_MEMORY = 2 * availableParallelism();

/**
 * File items (contract §8): `PUT` takes the original bytes (raw, or one multipart part named
 * `file`), `GET` gives them back. Reading and writing go through the same domain checks as the
 * item routes (role, item permissions), so whatever narrows those narrows these.
 */
export function fileRoutes(options: Pick<RouteDeps, 'maxFileBytes' | 'extractor' | 'clock' | 'fileDownloads'>): Router<AppState> {
  const router = new Router<AppState>();
  const route = `${FILES_PREFIX}{/*path}`;
  const slots = new Slots(UPLOADS_IN_MEMORY);
  const downloads = new DownloadBudget(options.fileDownloads);

  router.put(route, requirePermission('knowledge:write'), async (ctx) => {
    validateQuery.none(ctx.query);
    const path = pathAfter(ctx, FILES_PREFIX);
    const { actor, repo } = ctx.state;
    // Refused before waiting for a slot: a body declared too large, or encoded.
    refuseEarly(ctx.req, options.maxFileBytes);
    const { item } = await slots.run(async () => {
      const upload = await receiveUpload(ctx.req, options.maxFileBytes);
      return putFile({
        repo,
        actor,
        path,
        bytes: upload.bytes,
        contentType: upload.contentType,
        fileName: headerFileName(ctx.get('X-File-Name')) ?? upload.fileName,
        ifMatch: parseEtagCondition(ctx.get('If-Match')),
        ifNoneMatch: parseEtagCondition(ctx.get('If-None-Match')),
        maxFileBytes: options.maxFileBytes,
        extractor: options.extractor,
        clock: options.clock,
      });
    });
    ctx.set('ETag', formatEtag(item.etag));
    ctx.body = itemEnvelope(actor.orgId, item);
  });

  router.get(route, async (ctx) => {
    const { version } = validateQuery.getFile(ctx.query);
    const { actor, repo } = ctx.state;
    const { item, size, readBytes } = await getFile({ repo, actor, path: pathAfter(ctx, FILES_PREFIX), version });
    ctx.set('ETag', formatEtag(item.etag));
    const condition = parseEtagCondition(ctx.get('If-None-Match'));
    if (condition !== undefined && (condition === '*' || condition.includes(item.etag))) {
      ctx.status = 304;
      return;
    }
    const bytes = await downloads.read(ctx.res, size, readBytes);
    // The client left while its download waited for room: Koa writes nothing to a destroyed response.
    if (bytes === null) return;
    // Always a download, never rendered: an uploaded HTML page must not run as this origin (the dashboard's).
    ctx.set('Content-Disposition', contentDisposition(item.record.fileName ?? 'file'));
    ctx.set('X-Content-Type-Options', 'nosniff');
    ctx.set('Content-Security-Policy', "sandbox; default-src 'none'");
    ctx.type = item.record.contentType ?? 'application/octet-stream';
    ctx.body = bytes;
  });

  return router;
}

/**
 * X-File-Name as sent: header values arrive as Latin-1, so a UTF-8 name (what browsers and curl
 * send) is read back from those bytes; a name that is not UTF-8 is taken as Latin-1. Blank: none.
 */
function headerFileName(raw: string): string | undefined {
  if (raw === '') return undefined;
  const utf8 = Buffer.from(raw, 'latin1').toString('utf8');
  return utf8.includes('\uFFFD') ? raw : utf8;
}

/** `attachment` with an ASCII fallback name and the exact one in RFC 8187 form (`filename*`). */
export function contentDisposition(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%;]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`;
}
