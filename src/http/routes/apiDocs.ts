import Router from '@koa/router';
import { openApiDocument } from '../openapi/document.js';
import { DOCS_CSP, docsPage } from '../openapi/docsPage.js';
import { DOCS_PATH, OPENAPI_PATH } from '../openapi/serviceOperations.js';
import type { AppState } from '../state.js';

/**
 * The API description and its page, without a key: they hold what README already says and nothing of
 * anyone's data, and tools (code generators, API clients, the docs page) fetch them before they have a key.
 * Both are made once, at start: the description changes only with the code.
 */
export function apiDocsRoutes(deps: { version: string }): Router<AppState> {
  const router = new Router<AppState>();
  const document = openApiDocument(deps.version);
  const text = JSON.stringify(document);
  const page = docsPage(document);

  router.get(OPENAPI_PATH, (ctx) => {
    ctx.type = 'application/json';
    ctx.body = text;
  });

  router.get(DOCS_PATH, (ctx) => {
    ctx.set('Content-Security-Policy', DOCS_CSP);
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = page;
  });

  return router;
}
