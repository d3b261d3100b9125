import { promises as nodeFs } from 'node:fs';
import { putItem } from '../../src/domain/items.js';
import { createOrganization } from '../../src/domain/orgs.js';
import { silentLogger } from '../../src/common/log.js';
import type { FileHandleLike, FsPromises } from '../../src/storage/fs/fs.js';
import { KeyStore } from '../../src/storage/keys/keyStore.js';
import { OrgStore } from '../../src/storage/repo/orgStore.js';
import { hostGit } from '../support/git.js';

/**
 * Many large items, made fast: organization "default" is created in an empty data dir and filled
 * through the domain and storage layers directly (no HTTP), many writes queued at once so the
 * organization's write queue commits them in groups. Test data needs no durability, so fsync is a
 * no-op here; everything else (one commit per item, records, trees, history) is what the server writes.
 */
export async function writeBulkItems(args: {
  dataDir: string;
  count: number;
  bytes: number;
}): Promise<{ adminKey: string; ms: number }> {
  const started = Date.now();
  const fs = withoutFsync();
  const orgs = new OrgStore({ git: hostGit, fs, dataDir: args.dataDir, logger: silentLogger });
  const keys = new KeyStore({ fs, dataDir: args.dataDir, logger: silentLogger });
  const { secret, keyId } = await createOrganization({ orgs, keys, orgId: 'default' });
  const repo = await orgs.get('default');
  if (!repo) throw new Error('organization "default" did not open');
  const actor = { keyId, keyName: 'bulk', orgId: 'default', role: 'admin' as const };
  const GROUP = 256;
  for (let start = 0; start < args.count; start += GROUP) {
    const group = Array.from({ length: Math.min(GROUP, args.count - start) }, (_, j) => start + j);
    await Promise.all(
      group.map((i) => putItem({ repo, actor, path: bulkPath(i), content: bulkContent(i, args.bytes), maxContentBytes: args.bytes })),
    );
  }
  await orgs.closeAll();
  return { adminKey: secret, ms: Date.now() - started };
}

/** Item `i`'s path: 100 items per folder, so no tree grows large; path order is index order. */
export function bulkPath(i: number): string {
  return `bulk/f${String(Math.floor(i / 100)).padStart(3, '0')}/item-${String(i).padStart(5, '0')}.md`;
}

const FILLER = 'Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor. ';

/** Item `i`'s content: `bytes` of text, different for every item (so no cache can share them). */
export function bulkContent(i: number, bytes: number): string {
  const head = `# Item ${i}\n`;
  return head + FILLER.repeat(Math.ceil(bytes / FILLER.length)).slice(0, bytes - head.length);
}

/** The real file system, with fsync turned into a no-op (for generating test data only). */
function withoutFsync(): FsPromises {
  const fs = Object.create(nodeFs) as FsPromises;
  fs.open = async (path: string, flags: string, mode?: number): Promise<FileHandleLike> => {
    const handle = await nodeFs.open(path, flags, mode);
    return {
      write: (data) => handle.write(typeof data === 'string' ? Buffer.from(data) : data),
      chmod: (m) => handle.chmod(m),
      sync: async () => undefined,
      close: () => handle.close(),
      read: (buffer, offset, length, position) => handle.read(buffer, offset, length, position),
      stat: () => handle.stat(),
    };
  };
  return fs;
}
