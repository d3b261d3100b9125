import Router from '@koa/router';
import { PassThrough, pipeline, Transform } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { ParameterizedContext } from 'koa';
import { InvalidInput, OrgNotFound } from '../../domain/errors.js';
import { serveUploadPack } from '../../domain/gitAccess.js';
import { authenticate, type Actor } from '../../domain/keys.js';
import { validateOrgId } from '../../domain/orgs.js';
import { GitAuthRequired, GitPushRefused, UnsupportedMediaType } from '../httpErrors.js';
import type { AppState } from '../state.js';
import type { RouteDeps } from './common.js';

/** A fetch negotiation is wants and haves: megabytes at most. Anything bigger is abuse. */
const MAX_REQUEST_BYTES = 64 * 1024 * 1024;

/** `git clone http://x:<key>@host/git/<org>.git`: the key is the HTTP Basic password. */
async function gitActor(ctx: ParameterizedContext<AppState>, deps: Pick<RouteDeps, 'keys' | 'clock'>): Promise<Actor> {
  const basic = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(ctx.get('Authorization'));
  const decoded = basic ? Buffer.from(basic[1] as string, 'base64').toString('utf8') : '';
  const secret = decoded.includes(':') ? decoded.slice(decoded.indexOf(':') + 1) : undefined;
  const actor = await authenticate({ keys: deps.keys, secret, clock: deps.clock });
  if (!actor) throw new GitAuthRequired();
  ctx.state.actor = actor; // the access log names the key (its id)
  return actor;
}

/** `<orgId>.git`; anything else is a repository that is simply not there. */
function orgOf(repo: string | undefined): string {
  const orgId = repo?.endsWith('.git') ? repo.slice(0, -4) : '';
  try {
    return validateOrgId(orgId);
  } catch {
    throw new OrgNotFound({ orgId });
  }
}

/** pkt-line framing: four hex digits of length, then the payload. */
const pktLine = (s: string): string => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;

function limitBytes(max: number): Transform {
  let seen = 0;
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      seen += chunk.length;
      done(seen > max ? new Error('git request body too large') : null, chunk);
    },
  });
}

export function gitRoutes(deps: Pick<RouteDeps, 'keys' | 'orgs' | 'logger' | 'clock'>): Router<AppState> {
  const router = new Router<AppState>();

  const finish = (ctx: ParameterizedContext<AppState>, done: Promise<{ code: number | null; stderr: string }>): void => {
    void done.then(({ code, stderr }) => {
      if (code !== 0) deps.logger.warn('git upload-pack failed', { requestId: ctx.state.requestId, code, stderr: stderr.slice(0, 500) });
    });
  };

  router.get('/git/:repo/info/refs', async (ctx) => {
    const orgId = orgOf(ctx.params.repo);
    const service = ctx.query.service;
    if (service === 'git-receive-pack') throw new GitPushRefused();
    if (service !== 'git-upload-pack') throw new InvalidInput({ reason: 'Only smart HTTP (service=git-upload-pack) is served' });
    const actor = await gitActor(ctx, deps);
    const { pack, protocolV2 } = await serveUploadPack({ orgs: deps.orgs, actor, orgId, advertiseRefs: true, gitProtocol: ctx.get('Git-Protocol') });
    finish(ctx, pack.done);
    const body = new PassThrough();
    // Protocol v0/v1 advertisements start with the service line; v2 has none (as git http-backend does).
    if (!protocolV2) body.write(`${pktLine('# service=git-upload-pack\n')}0000`);
    pack.stdout.pipe(body);
    ctx.status = 200;
    ctx.type = 'application/x-git-upload-pack-advertisement';
    ctx.body = body;
  });

  router.post('/git/:repo/git-upload-pack', async (ctx) => {
    const orgId = orgOf(ctx.params.repo);
    const actor = await gitActor(ctx, deps);
    if (ctx.get('Content-Type') !== 'application/x-git-upload-pack-request') {
      throw new UnsupportedMediaType({ contentType: ctx.get('Content-Type') });
    }
    const encoding = ctx.get('Content-Encoding').toLowerCase();
    const gzip = encoding === 'gzip' || encoding === 'x-gzip';
    if (!gzip && encoding !== '' && encoding !== 'identity') throw new InvalidInput({ reason: `Unsupported Content-Encoding ${encoding}` });
    // pipeline, not pipe: a bad gzip stream or an oversized body must fail this request, not the process.
    const stages = gzip ? [limitBytes(MAX_REQUEST_BYTES), createGunzip(), limitBytes(MAX_REQUEST_BYTES)] : [limitBytes(MAX_REQUEST_BYTES)];
    pipeline([ctx.req, ...stages], (err) => {
      if (err) deps.logger.info('git request body refused', { requestId: ctx.state.requestId, error: err.message });
    });
    const input = stages[stages.length - 1] as Transform;
    const { pack } = await serveUploadPack({ orgs: deps.orgs, actor, orgId, advertiseRefs: false, gitProtocol: ctx.get('Git-Protocol'), input });
    finish(ctx, pack.done);
    ctx.req.on('close', () => {
      if (!ctx.res.writableFinished) pack.kill();
    });
    ctx.status = 200;
    ctx.type = 'application/x-git-upload-pack-result';
    ctx.body = pack.stdout;
  });

  router.all('/git/:repo/git-receive-pack', async () => {
    throw new GitPushRefused();
  });

  return router;
}
