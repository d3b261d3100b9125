import type { Readable } from 'node:stream';
import { sanitizeGitProtocol, type UploadPack } from '../storage/git/gitCli.js';
import type { OrgStore } from '../storage/repo/orgStore.js';
import { requireRole } from './access.js';
import { OrgNotFound } from './errors.js';
import type { Actor } from './keys.js';
import { requireUnscoped } from './scopes.js';

/**
 * Clone and fetch over HTTP: admin keys without scopes only, of the organization
 * whose repository it is (another organization's repository is simply not there).
 */
export async function serveUploadPack(args: {
  orgs: OrgStore;
  actor: Actor;
  orgId: string;
  advertiseRefs: boolean;
  gitProtocol: string;
  input?: Readable;
}): Promise<{ pack: UploadPack; protocolV2: boolean }> {
  const { orgs, actor, orgId } = args;
  if (actor.orgId !== orgId || !(await orgs.exists(orgId))) throw new OrgNotFound({ orgId });
  requireRole(actor, 'knowledge:admin');
  // A clone carries every folder and all history: no scope can be kept in it.
  requireUnscoped(actor, 'clone or fetch the repository (a clone holds every folder)');
  const protocol = sanitizeGitProtocol(args.gitProtocol);
  const pack = orgs.uploadPack(orgId, { advertiseRefs: args.advertiseRefs, protocol, input: args.input });
  return { pack, protocolV2: protocol?.split(':').includes('version=2') ?? false };
}
