import { systemClock, type Clock } from '../common/clock.js';
import type { KeyRecord, KeyStore } from '../storage/keys/keyStore.js';
import { InvalidInput } from './errors.js';
import { validateKeyName, validateRole } from './keys.js';
import { validateOrgId } from './orgs.js';
import { validateScopes } from './scopes.js';

/**
 * `key export` / `key import` (README, Failover): an organization's key records moved to another
 * node with its repository, so that every key keeps working there. Only what keys.json holds
 * travels: SHA-256 hashes, never a secret (no secret is stored anywhere to export).
 */
export const KEY_EXPORT_KIND = 'knowledge-store-keys';
export const KEY_EXPORT_VERSION = 1;

export interface KeyExport {
  kind: typeof KEY_EXPORT_KIND;
  version: typeof KEY_EXPORT_VERSION;
  orgId: string;
  exportedAt: string;
  keys: KeyRecord[];
}

export async function exportKeys(args: { keys: KeyStore; orgId: string; clock?: Clock }): Promise<KeyExport> {
  const orgId = validateOrgId(args.orgId);
  const keys = await args.keys.list(orgId);
  return { kind: KEY_EXPORT_KIND, version: KEY_EXPORT_VERSION, orgId, exportedAt: (args.clock ?? systemClock)().toISOString(), keys };
}

export interface KeyImportResult {
  orgId: string;
  added: string[];
  /** Already there, the same key (its last use may differ): an import run twice changes nothing. */
  unchanged: string[];
}

/**
 * The records of a `key export` file, checked for `orgId`: a record that is not what `key export`
 * writes, or keys of another organization, refuse the file before anything changes.
 */
export function readKeyExport(text: string, targetOrgId: string): KeyRecord[] {
  const orgId = validateOrgId(targetOrgId);
  const file = parseExport(text);
  if (file.orgId !== orgId) {
    throw new InvalidInput({
      reason: `The file holds the keys of organization "${file.orgId}", not "${orgId}": a key names its organization, so it works only there`,
    });
  }
  const records = file.keys.map((k, i) => checkRecord(k, i, orgId));
  const seen = new Set<string>();
  for (const k of records) {
    if (seen.has(k.id) || seen.has(k.hash)) throw new InvalidInput({ reason: `The file lists key ${k.id} (or its hash) twice` });
    seen.add(k.id).add(k.hash);
  }
  return records;
}

/**
 * Adds the file's keys to `orgId`. All or nothing: a key whose id or hash is already taken by a
 * different key refuses the whole import.
 */
export async function importKeys(args: { keys: KeyStore; orgId: string; text: string }): Promise<KeyImportResult> {
  return addKeys({ keys: args.keys, orgId: args.orgId, records: readKeyExport(args.text, args.orgId) });
}

/** Adds records `readKeyExport` gave; the same key already here (by id, all fields but last use) is left as it is. */
export async function addKeys(args: { keys: KeyStore; orgId: string; records: readonly KeyRecord[] }): Promise<KeyImportResult> {
  const unchanged: string[] = [];
  const added = await args.keys.addChosen((existing) => {
    const byId = new Map(existing.map((k) => [k.id, k]));
    const byHash = new Map(existing.map((k) => [k.hash, k]));
    unchanged.length = 0;
    const fresh: KeyRecord[] = [];
    for (const k of args.records) {
      const same = byId.get(k.id);
      if (same && sameKey(same, k)) {
        unchanged.push(k.id);
        continue;
      }
      if (same) {
        throw new InvalidInput({
          reason: `Key ${k.id} already exists here and differs from the file's (${differences(same, k).join(', ')}): nothing was imported`,
        });
      }
      const clash = byHash.get(k.hash);
      if (clash) throw new InvalidInput({ reason: `Key ${k.id} has the same secret as key ${clash.id} already here: nothing was imported` });
      fresh.push({ ...k });
    }
    return fresh;
  });
  return { orgId: args.orgId, added: added.map((k) => k.id), unchanged: [...unchanged] };
}

/** The fields that make a key what it is; its last use is bookkeeping and may differ between nodes. */
const IDENTITY = ['id', 'orgId', 'name', 'role', 'hash', 'createdAt', 'revokedAt', 'scopes'] as const;

function differences(a: KeyRecord, b: KeyRecord): string[] {
  return IDENTITY.filter((f) => JSON.stringify(a[f] ?? null) !== JSON.stringify(b[f] ?? null));
}

function sameKey(a: KeyRecord, b: KeyRecord): boolean {
  return differences(a, b).length === 0;
}

function parseExport(text: string): { orgId: string; keys: unknown[] } {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new InvalidInput({ reason: `The key file is not JSON (${(err as Error).message})` });
  }
  const file = isObject(value) ? value : {};
  if (file.kind !== KEY_EXPORT_KIND) throw new InvalidInput({ reason: `Not a key export: "kind" must be "${KEY_EXPORT_KIND}"` });
  if (file.version !== KEY_EXPORT_VERSION) {
    throw new InvalidInput({ reason: `Key export version ${JSON.stringify(file.version)} is not known here (this version reads ${KEY_EXPORT_VERSION})` });
  }
  if (typeof file.orgId !== 'string' || !Array.isArray(file.keys)) throw new InvalidInput({ reason: 'A key export needs "orgId" and a "keys" list' });
  return { orgId: validateOrgId(file.orgId), keys: file.keys as unknown[] };
}

const KEY_ID = /^key_[0-9a-f]{16}$/;
const SHA256_HEX = /^[0-9a-f]{64}$/;

/** One record as keys.json holds it, or a refusal naming the record and the field. */
function checkRecord(value: unknown, index: number, orgId: string): KeyRecord {
  const r = isObject(value) ? value : {};
  const bad = (field: string, rule: string): never => {
    throw new InvalidInput({ reason: `Key ${index + 1} in the file${typeof r.id === 'string' ? ` (${r.id})` : ''}: "${field}" ${rule}` });
  };
  const str = (field: string): string => (typeof r[field] === 'string' ? (r[field] as string) : bad(field, 'must be a string'));
  const time = (field: string, nullable: boolean): string | null => {
    const v = r[field];
    if (v === null && nullable) return null;
    if (typeof v !== 'string' || Number.isNaN(Date.parse(v))) return bad(field, `must be a time${nullable ? ' or null' : ''}`);
    return v;
  };
  const id = str('id');
  if (!KEY_ID.test(id)) bad('id', 'must be key_ and 16 hex digits');
  if (str('orgId') !== orgId) bad('orgId', `must be "${orgId}"`);
  const hash = str('hash');
  if (!SHA256_HEX.test(hash)) bad('hash', 'must be a SHA-256 in hex (64 lowercase hex digits)');
  const record: KeyRecord = {
    id,
    orgId,
    name: validateKeyName(str('name')),
    role: validateRole(str('role')),
    hash,
    createdAt: time('createdAt', false) as string,
    revokedAt: time('revokedAt', true),
    lastUsedAt: time('lastUsedAt', true),
  };
  if (r.scopes !== undefined) {
    if (!Array.isArray(r.scopes) || !r.scopes.every((s) => typeof s === 'string')) bad('scopes', 'must be a list of folders');
    const scopes = validateScopes(r.scopes as string[]);
    if (JSON.stringify(scopes) !== JSON.stringify(r.scopes)) bad('scopes', 'must be written as `key export` writes them');
    record.scopes = [...scopes];
  }
  for (const field of Object.keys(r)) {
    if (!(field in record) && field !== 'scopes') bad(field, 'is not a field of a key');
  }
  return record;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
