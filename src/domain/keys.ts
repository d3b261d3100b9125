import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { systemClock, type Clock } from '../common/clock.js';
import type { KeyRecord, KeyStore } from '../storage/keys/keyStore.js';
import { Lru } from '../common/lru.js';
import { InvalidInput, KeyNotFound } from './errors.js';
import { isRole, type Role } from './permissions.js';
import { validateScopes } from './scopes.js';

/** Who is calling: resolved from an API key, handed to every domain operation. */
export interface Actor {
  keyId: string;
  keyName: string;
  orgId: string;
  role: Role;
  /** The folders the key is limited to (see scopes.ts); absent: the whole organization. */
  scopes?: readonly string[];
}

export const KEY_PREFIX = 'ks_';
/** 32 random bytes: 256 bits, too many to guess, base64url. */
const SECRET_BYTES = 32;
/**
 * A key is `ks_<orgId>_<43 base64url>`: the organization is readable without a look-up, so a proxy
 * can route on it (README, Scaling). Organization ids never hold `_`, so the first `_` after the
 * prefix ends the id, and the 43 characters after it are the 256 random bits. Keys made before
 * the organization was part of them, `ks_<43 base64url>`, keep working: 46 characters, never 48
 * or more like the new shape, so no string matches both.
 */
const ORG_KEY_SHAPE = /^ks_([a-z0-9][a-z0-9-]{0,62})_[A-Za-z0-9_-]{43}$/;
const LEGACY_KEY_SHAPE = /^ks_[A-Za-z0-9_-]{43}$/;

/** The organization a key names, null for a legacy key (no organization in it), undefined for a string that is no key. */
export function keyOrg(secret: string): string | null | undefined {
  const named = ORG_KEY_SHAPE.exec(secret);
  if (named) return named[1] as string;
  return LEGACY_KEY_SHAPE.test(secret) ? null : undefined;
}

/** A new key's secret: the organization, then 256 fresh random bits. */
function newSecret(orgId: string): string {
  return `${KEY_PREFIX}${orgId}_${randomBytes(SECRET_BYTES).toString('base64url')}`;
}

export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/**
 * The hashes of secrets that authenticated lately, so that a client sending the same key on every request is
 * not hashed every time (a SHA-256 was about 3% of a fast GET's CPU). A secret's hash never changes, so nothing here
 * goes stale: the key is still looked up by hash, and checked for revocation, on every request. Only secrets
 * that matched a key are kept (guesses would only churn it), the least recently used dropped past `max`.
 */
export class SecretHashes {
  private readonly known: Lru<string, string>;
  /**
   * In front of the LRU, the last secret seen in each of RECENT_SLOTS slots (by its last characters, which are
   * random): the keys in use at a time are found with one string comparison, without the LRU's reordering of its
   * map (a delete and a set, about as much as the lookup). What is found here is a hash like any other.
   */
  private readonly recent: Array<{ secret: string; hash: string } | undefined> = new Array<undefined>(RECENT_SLOTS);

  constructor(max = 10_000) {
    this.known = new Lru(max);
  }

  /** The hash of a secret that authenticated lately, if it is kept. */
  kept(secret: string): string | undefined {
    const slot = recentSlot(secret);
    const recent = this.recent[slot];
    if (recent !== undefined && recent.secret === secret) return recent.hash;
    const hash = this.known.get(secret);
    if (hash !== undefined) this.recent[slot] = { secret, hash };
    return hash;
  }

  remember(secret: string, hash: string): void {
    this.known.set(secret, hash);
  }
}

const RECENT_SLOTS = 64;

/** A slot for `secret` among RECENT_SLOTS: from its last two characters (base64url, random in a real key). */
function recentSlot(secret: string): number {
  return (secret.charCodeAt(secret.length - 1) * 31 + secret.charCodeAt(secret.length - 2)) & (RECENT_SLOTS - 1);
}

/** Key names become git author names: no angle brackets, no control characters (fsck --strict). */
export function validateKeyName(name: string): string {
  if (name.length < 1 || name.length > 100) throw new InvalidInput({ reason: 'Key name must be 1 to 100 characters' });
  // eslint-disable-next-line no-control-regex
  if (/[<>\u0000-\u001f\u007f]/.test(name) || name.trim() !== name) {
    throw new InvalidInput({ reason: 'Key name must not contain "<", ">", control characters, or leading/trailing spaces' });
  }
  return name;
}

export function validateRole(role: string): Role {
  if (!isRole(role)) throw new InvalidInput({ reason: `Unknown role "${role}": use reader, writer or admin` });
  return role;
}

/** Creates a key; the secret is returned here once and never stored. */
export async function createKey(args: {
  keys: KeyStore;
  orgId: string;
  role: string;
  name: string;
  /** Folders the key is limited to; absent or undefined: the whole organization. */
  scopes?: readonly string[];
  clock?: Clock;
}): Promise<{ key: KeyRecord; secret: string }> {
  const role = validateRole(args.role);
  const name = validateKeyName(args.name);
  const scopes = args.scopes === undefined ? undefined : validateScopes(args.scopes);
  const secret = newSecret(args.orgId);
  const key: KeyRecord = {
    id: `key_${randomUUID().replace(/-/g, '').slice(0, 16)}`,
    orgId: args.orgId,
    name,
    role,
    hash: hashSecret(secret),
    createdAt: (args.clock ?? systemClock)().toISOString(),
    revokedAt: null,
    lastUsedAt: null,
    // Only a scoped key carries the field: a key file without it reads as before scopes existed.
    ...(scopes ? { scopes } : {}),
  };
  await args.keys.add(key);
  return { key, secret };
}

/** The organization's keys, revoked ones included; the caller must present them without their hashes. */
export function listKeys(args: { keys: KeyStore; orgId: string }): Promise<KeyRecord[]> {
  return args.keys.list(args.orgId);
}

export async function revokeKey(args: { keys: KeyStore; keyId: string; orgId?: string; clock?: Clock }): Promise<KeyRecord> {
  const existing = await args.keys.get(args.keyId);
  if (!existing || (args.orgId !== undefined && existing.orgId !== args.orgId)) throw new KeyNotFound({ keyId: args.keyId });
  const at = (args.clock ?? systemClock)().toISOString();
  const revoked = await args.keys.update(args.keyId, (k) => {
    k.revokedAt ??= at;
  });
  if (!revoked) throw new KeyNotFound({ keyId: args.keyId });
  return revoked;
}

/**
 * The actor for a presented secret, or null for a missing, malformed, unknown or
 * revoked key, or one whose organization part is not its record's organization (a record
 * imported under another organization: the proxy would route the key elsewhere).
 * The lookup is by hash; the final comparison is constant-time.
 */
export async function authenticate(args: { keys: KeyStore; secret: string | undefined; clock?: Clock; hashes?: SecretHashes }): Promise<Actor | null> {
  const { keys, secret } = args;
  const named = secret ? keyOrg(secret) : undefined;
  if (!secret || named === undefined) return null;
  const kept = args.hashes?.kept(secret);
  const hash = kept ?? hashSecret(secret);
  const key = await keys.findByHash(hash);
  const actor = key ? actorOfKey(key) : null;
  if (!key || !actor || (named !== null && named !== key.orgId)) return null;
  if (!timingSafeEqual(Buffer.from(key.hash, 'hex'), Buffer.from(hash, 'hex'))) return null;
  keys.noteUsed(key.id, (args.clock ?? systemClock)());
  // Once: a kept hash was moved to the front by `kept` already (a second move per GET cost as much as the lookup).
  if (kept === undefined) args.hashes?.remember(secret, hash);
  return actor;
}

/**
 * The actor a key acts as, or null once it is revoked: the one place a key becomes an actor, for a
 * request (above) and for what acts later in a key's name (a webhook sees what its creator may read).
 */
export function actorOfKey(key: KeyRecord): Actor | null {
  if (key.revokedAt !== null || !isRole(key.role)) return null;
  const actor: Actor = { keyId: key.id, keyName: key.name, orgId: key.orgId, role: key.role };
  // A scopes field that is not a list of strings is not what we wrote: the key reaches nothing rather than everything.
  if (key.scopes !== undefined) actor.scopes = Array.isArray(key.scopes) && key.scopes.every((s) => typeof s === 'string') ? key.scopes : [];
  return actor;
}
