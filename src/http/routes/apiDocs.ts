import Router from '@koa/router';
import { openApiDocument } from '../openapi/document.js';
import { DOCS_CSP, docsPage } from '../openapi/docsPage.js';
import { DOCS_PATH, OPENAPI_PATH } from '../openapi/serviceOperations.js';
import type { AppState } from '../state.js';

/**
 * The API description and its page, without a key: they hold what README already says and nothing of
 * anyone's data, and tools (code generators, API clients, the docs page) fetch them before they have a key.
 * The description changes only with the code: made once.
 */
export function apiDocsRoutes(deps: { version: string }): Router<AppState> {
  const router = new Router<AppState>();
  // Made at the first request for either (~15 ms), then kept: most servers (and every test server) never serve them.
  let made: { text: string; page: string } | undefined;
  const documents = (): { text: string; page: string } => {
    if (!made) {
      const document = openApiDocument(deps.version);
      made = { text: JSON.stringify(document), page: docsPage(document) };
    }
    return made;
  };

  router.get(OPENAPI_PATH, (ctx) => {
    ctx.type = 'application/json';
    ctx.body = documents().text;
  });

  router.get(DOCS_PATH, (ctx) => {
    ctx.set('Content-Security-Policy', DOCS_CSP);
    ctx.set('X-Frame-Options', 'DENY');
    ctx.set('Referrer-Policy', 'no-referrer');
    ctx.type = 'text/html; charset=utf-8';
    ctx.body = documents().page;
  });

  return router;
}
