import { systemClock, type Clock } from '../common/clock.js';
import type { KeyStore } from '../storage/keys/keyStore.js';
import type { OrgStore } from '../storage/repo/orgStore.js';
import { InvalidInput } from './errors.js';
import { createKey } from './keys.js';

/** Organization ids: 1–63 of a-z 0-9 -, starting with a letter or digit. */
const ORG_ID = /^[a-z0-9][a-z0-9-]{0,62}$/;

export function validateOrgId(orgId: string): string {
  if (!ORG_ID.test(orgId)) {
    throw new InvalidInput({
      reason: `Invalid organization id "${orgId}": use 1-63 of a-z, 0-9 and "-", starting with a letter or digit`,
    });
  }
  return orgId;
}

/** Creates the organization's repository and its first admin key; returns the key's secret (shown once). */
export async function createOrganization(args: {
  orgs: OrgStore;
  keys: KeyStore;
  orgId: string;
  keyName?: string;
  clock?: Clock;
}): Promise<{ orgId: string; keyId: string; secret: string }> {
  const orgId = validateOrgId(args.orgId);
  const now = (args.clock ?? systemClock)();
  await args.orgs.create(orgId, now);
  const { key, secret } = await createKey({ keys: args.keys, orgId, role: 'admin', name: args.keyName ?? 'admin', clock: () => now });
  return { orgId, keyId: key.id, secret };
}
