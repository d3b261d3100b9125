import Router from '@koa/router';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ParameterizedContext } from 'koa';
import { errnoCode } from '../../common/errors.js';
import { packageRoot } from '../../common/packageInfo.js';
import type { AppState } from '../state.js';
import type { RouteDeps } from './common.js';

export const DASHBOARD_PREFIX = '/dashboard';

/**
 * The page runs only its own bundle and stylesheet and talks only to this origin:
 * no inline script or style (item content is untrusted, so even if markup slipped
 * through the renderer it could not run), no frames, no forms posting anywhere, no base
 * tag games. Images only from here or data: URLs (markdown images elsewhere are not loaded).
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'none'",
].join('; ');

/** The only files served: what `npm run build` writes to dist/dashboard/; nothing else there is reachable. */
const FILES: Record<string, { file: string; type: string }> = {
  '': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/index.html': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};

/** dist/dashboard of this package, found from this module whether it runs from src/ (tsx) or dist/src/. */
export function defaultDashboardDir(): string {
  return join(packageRoot(), 'dist', 'dashboard');
}

function securityHeaders(ctx: ParameterizedContext<AppState>): void {
  ctx.set('Content-Security-Policy', DASHBOARD_CSP);
  ctx.set('X-Frame-Options', 'DENY');
  ctx.set('Referrer-Policy', 'no-referrer');
  // X-Content-Type-Options: nosniff and Cache-Control: no-store come from requestContext, as on every response.
}

/**
 * The admin dashboard's static files, without auth: the page holds nothing secret,
 * and every API call it makes carries the admin key the user typed. A missing build
 * is a clear 503, not a crash or a JSON 404.
 */
export function dashboardRoutes(deps: Pick<RouteDeps, 'dashboardDir'> = {}): Router<AppState> {
  const dir = deps.dashboardDir ?? defaultDashboardDir();
  const router = new Router<AppState>();

  for (const [suffix, { file, type }] of Object.entries(FILES)) {
    router.get(`${DASHBOARD_PREFIX}${suffix}`, async (ctx) => {
      securityHeaders(ctx);
      let body: Buffer;
      try {
        body = await readFile(join(dir, file));
      } catch (err) {
        if (errnoCode(err) !== 'ENOENT' && errnoCode(err) !== 'ENOTDIR') throw err;
        ctx.status = 503;
        ctx.type = 'text/plain; charset=utf-8';
        ctx.body = `The dashboard is not built (${file} is missing). Run \`npm run build\`, then reload.\n`;
        return;
      }
      ctx.type = type;
      ctx.body = body;
    });
  }

  // The server's root has nothing else to show a browser.
  router.get('/', async (ctx) => {
    ctx.redirect(`${DASHBOARD_PREFIX}/`);
  });

  return router;
}
