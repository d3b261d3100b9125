import type { Readable } from 'node:stream';
import { sanitizeGitProtocol, type UploadPack } from '../storage/git/gitCli.js';
import type { OrgStore } from '../storage/repo/orgStore.js';
import { requireRole } from './access.js';
import { OrgNotFound } from './errors.js';
import type { Actor } from './keys.js';

/**
 * Clone and fetch over HTTP: admin keys only, of the organization
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
  const protocol = sanitizeGitProtocol(args.gitProtocol);
  const pack = orgs.uploadPack(orgId, { advertiseRefs: args.advertiseRefs, protocol, input: args.input });
  return { pack, protocolV2: protocol?.split(':').includes('version=2') ?? false };
}
