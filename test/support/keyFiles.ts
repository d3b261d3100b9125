import type { KeyRecord } from '../../src/storage/keys/keyStore.js';

/** What the key store keeps in a data directory: keys.json and the log of changes since, keys.log. */
export const KEY_FILES = ['keys.json', 'keys.log'] as const;

/**
 * Both key files as one text (a file not there reads as nothing), as a test compares them ("nothing
 * changed") or scans them (no secret stored). `read` is the file system's readFile, memfs's or node's.
 */
export async function keyFilesText(read: (path: string, encoding: 'utf8') => Promise<string | Buffer>, dir: string): Promise<string> {
  const texts = await Promise.all(
    KEY_FILES.map((name) =>
      read(`${dir}/${name}`, 'utf8').then(
        (text) => `${name}:\n${String(text)}`,
        (err: { code?: string }) => {
          if (err.code === 'ENOENT') return `${name}: none\n`;
          throw err;
        },
      ),
    ),
  );
  return texts.join('');
}

/**
 * The records the key files hold, read the plain way (keys.json, then each line of keys.log applied in
 * order), so that a test checks what is on disk without going through the store under test.
 */
export async function storedKeyRecords(read: (path: string, encoding: 'utf8') => Promise<string | Buffer>, dir: string): Promise<KeyRecord[]> {
  const byId = new Map<string, KeyRecord>();
  const snapshot = await read(`${dir}/keys.json`, 'utf8').then(String, () => null);
  if (snapshot !== null) for (const k of (JSON.parse(snapshot) as { keys: KeyRecord[] }).keys) byId.set(k.id, k);
  const log = await read(`${dir}/keys.log`, 'utf8').then(String, () => '');
  for (const line of log.split('\n').filter(Boolean)) {
    const change = JSON.parse(line) as { key?: KeyRecord; used?: Record<string, string> };
    if (change.key) byId.set(change.key.id, change.key);
    for (const [id, at] of Object.entries(change.used ?? {})) {
      const k = byId.get(id);
      if (k && (!k.lastUsedAt || k.lastUsedAt < at)) byId.set(id, { ...k, lastUsedAt: at });
    }
  }
  return [...byId.values()];
}
