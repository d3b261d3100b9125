import { expect } from 'chai';
import { createLogger, type Logger } from '../../../src/common/log.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import type { IndexEntry } from '../../../src/storage/repo/itemIndex.js';
import type { FolderRule } from '../../../src/storage/repo/itemRecord.js';
import { OrgRepo } from '../../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../../src/storage/repo/orgStore.js';
import { IndexSnapshotFile } from '../../../src/storage/repo/indexSnapshot.js';
import { silentLogger } from '../../../src/common/log.js';
import { textRecord } from '../../support/records.js';
import { INTENT_AUTHOR, moveIntent, putIntent } from '../../support/intents.js';
import { PackReads } from '../../support/packReads.js';
import { memoryFs } from '../../support/memfs.js';
import { hostGit } from '../../support/git.js';
import { turnsDuring } from '../../support/turns.js';

/**
 * The index snapshot (target: start in under 3 s at 50,000 items). A start
 * from a snapshot of the head reads no record; from an older snapshot it reads
 * only what changed since; a damaged or foreign one is rebuilt from git. In
 * every case the index is the one a rebuild from git gives.
 */

const DATA = '/data';
const GITDIR = `${DATA}/orgs/acme.git`;
const SNAPSHOT = `${GITDIR}/knowledge-index.json`;

interface Logged {
  msg: string;
  [k: string]: unknown;
}

describe('storage/indexSnapshot (memfs)', () => {
  let fs: FsPromises;
  let logs: Logged[];
  let logger: Logger;
  /** Counts packs read from (each group commit wrote one): a start from the head's snapshot needs none for the index. */
  const packReads = new PackReads();
  const counting = (): FsPromises => packReads.view(fs);
  const open = (): Promise<OrgRepo> => OrgRepo.open({ orgId: 'acme', fs: counting(), gitdir: GITDIR, logger });
  const state = (repo: OrgRepo): { items: IndexEntry[]; rules: FolderRule[]; head: string | null } => ({
    items: [...repo.entries()],
    rules: repo.folderRules(),
    head: repo.headCommit,
  });
  /** The index as a start without any snapshot builds it, from git alone. */
  const rebuilt = async (): Promise<ReturnType<typeof state>> => {
    const saved = await fs.readFile(SNAPSHOT);
    await fs.unlink(SNAPSHOT);
    const repo = await open();
    const out = state(repo);
    await repo.close();
    await fs.writeFile(SNAPSHOT, saved);
    return out;
  };
  /** The saved file as format 2 holds it: a header line, then one line per item. */
  const saved = async (): Promise<{ format: number; head: string; tree: string; count: number; rules: unknown[]; items: unknown[] }> => {
    const [header = '', ...lines] = (await fs.readFile(SNAPSHOT, 'utf8')).split('\n');
    const h = JSON.parse(header) as { knowledgeIndexSnapshot: number; head: string; tree: string; items: number; rules: unknown[] };
    return { format: h.knowledgeIndexSnapshot, head: h.head, tree: h.tree, count: h.items, rules: h.rules, items: lines.filter((l) => l !== '').map((l) => JSON.parse(l) as unknown) };
  };
  const rule = (folder: string): FolderRule => ({ folder, requiredReadPermission: 'knowledge:admin', requiredWritePermission: 'knowledge:admin', updatedAt: '2024-03-01T00:00:00.000Z', updatedBy: INTENT_AUTHOR.email });

  beforeEach(async () => {
    ({ fs } = memoryFs());
    logs = [];
    packReads.clear();
    logger = createLogger({ level: 'info', write: (line) => logs.push(JSON.parse(line) as Logged) });
    await new OrgStore({ git: hostGit, fs, dataDir: DATA, logger }).create('acme', new Date('2024-03-01T09:00:00Z'));
    const repo = await open();
    for (let i = 0; i < 30; i++) await repo.write((v) => putIntent(v, `f${i % 3}/item-${i}.md`, `content ${i}`));
    await repo.write((v) => moveIntent(v, 'f0/item-0.md', 'trash'));
    await repo.close();
  });

  it('is saved at close for the head, and a start from it reads no record, with the same index as a rebuild', async () => {
    const first = await open();
    const head = first.headCommit;
    await first.close();
    const file = await saved();
    expect(file.format).to.equal(2);
    expect(file.head).to.equal(head);
    expect(file.count).to.equal(30);
    expect(file.items).to.have.length(30);
    packReads.clear();
    const repo = await open();
    // The head commit's pack (for its tree) is read; no record is.
    expect(packReads.packsRead, 'packs read at start').to.equal(1);
    packReads.clear();
    expect(state(repo)).to.deep.equal(await rebuilt());
    // Without the snapshot, the records of the 31 commits' packs are read.
    expect(packReads.packsRead, 'packs read by a rebuild').to.be.greaterThan(20);
    expect(repo.get('f0/item-0.md')?.record.deletedAt).to.be.a('string');
    await repo.close();
  });

  it('an older snapshot is caught up from the changed files only: updates, trash, restore, purge, new items, folder rules', async () => {
    const old = await fs.readFile(SNAPSHOT);
    const repo = await open();
    await repo.write((v) => putIntent(v, 'f1/item-1.md', 'changed'));
    await repo.write((v) => putIntent(v, 'new/deep/n.md', 'new'));
    await repo.write((v) => moveIntent(v, 'f0/item-0.md', 'restore'));
    await repo.write((v) => moveIntent(v, 'f2/item-2.md', 'trash'));
    await repo.write((v) => moveIntent(v, 'f2/item-2.md', 'purge'));
    await repo.write((v) => moveIntent(v, 'f1/item-4.md', 'trash'));
    await repo.write(() => ({ mutation: 'folderRule', folder: 'f1', rule: rule('f1'), summary: 'rule', author: INTENT_AUTHOR, when: new Date() }));
    await repo.write(() => ({ mutation: 'folderRule', folder: 'new', rule: rule('new'), summary: 'rule', author: INTENT_AUTHOR, when: new Date() }));
    await repo.write(() => ({ mutation: 'folderRule', folder: 'new', rule: null, summary: 'rule off', author: INTENT_AUTHOR, when: new Date() }));
    const expected = state(repo);
    // A crash: the snapshot on disk is the one from before those writes.
    await fs.writeFile(SNAPSHOT, old);
    logs = [];
    const reopened = await open();
    expect(state(reopened)).to.deep.equal(expected);
    expect(state(reopened)).to.deep.equal(await rebuilt());
    const caughtUp = logs.find((l) => l.msg === 'index snapshot caught up');
    // item + record for each changed item, the new one, the trash moves, two rule files (one added, one gone).
    expect(caughtUp?.files).to.be.within(8, 16);
    // And the start saved a snapshot of the head it reached.
    expect((await saved()).head).to.equal(expected.head);
    await reopened.close();
    await repo.close();
  });

  for (const [label, damage] of [
    ['a torn file', (text: string) => text.slice(0, text.length / 2)],
    ['a record with a field of the wrong type', (text: string) => text.replace('"itemType":"text"', '"itemType":7')],
    ['an object id that is not one', (text: string) => text.replace(/"[0-9a-f]{40}"/, '"nope"')],
    ['a tree git does not have (another repository\'s snapshot)', (text: string) => text.replace(/"tree":"[0-9a-f]{40}"/, `"tree":"${'1'.repeat(40)}"`).replace(/"head":"[0-9a-f]{40}"/, `"head":"${'2'.repeat(40)}"`)],
    ['a file cut at the end of a line (fewer items than its header counts)', (text: string) => text.split('\n').slice(0, -3).join('\n') + '\n'],
    ['a line holding two values', (text: string) => text.replace(/\n(\[[^\n]*\])\n/, '\n$1,[]\n')],
    ['another format', (text: string) => text.replace(/"knowledgeIndexSnapshot":\d+/, '"knowledgeIndexSnapshot":99')],
  ] as const) {
    it(`${label} is set aside: the index is rebuilt from git and a good snapshot written`, async () => {
      const expected = await rebuilt();
      await fs.writeFile(SNAPSHOT, damage(await fs.readFile(SNAPSHOT, 'utf8')));
      const repo = await open();
      expect(state(repo)).to.deep.equal(expected);
      expect((await saved()).head).to.equal(expected.head);
      await repo.close();
    });
  }

  it('reads a snapshot of format 1 (one JSON object) without a rebuild, and saves it again as format 2', async () => {
    const expected = await rebuilt();
    const now = await saved();
    // What an earlier version wrote for the same head.
    await fs.writeFile(SNAPSHOT, JSON.stringify({ knowledgeIndexSnapshot: 1, head: now.head, tree: now.tree, items: now.items, rules: now.rules }));
    packReads.clear();
    const repo = await open();
    expect(packReads.packsRead, 'packs read at start: the head tree only, no record').to.equal(1);
    expect(state(repo)).to.deep.equal(expected);
    await repo.close();
    const again = await saved();
    expect(again.format).to.equal(2);
    expect(again.items).to.deep.equal(now.items);
  });

  it('reads back every record as written, its repeated strings shared: authors, changed and unchanged times, deletions', async () => {
    const file = new IndexSnapshotFile(fs, GITDIR, silentLogger);
    const oid = (n: number): string => n.toString(16).padStart(40, '0');
    const items: IndexEntry[] = [
      { recordOid: oid(1), blobOid: oid(2), record: textRecord('a.md') },
      { recordOid: oid(3), blobOid: oid(4), record: textRecord('b.md', { updatedAt: '2024-05-01T00:00:00.000Z', updatedBy: 'key_other000000000' }) },
      { recordOid: oid(5), blobOid: oid(6), record: textRecord('c.md', { deletedAt: '2024-06-01T00:00:00.000Z', deletedBy: 'key_third000000000' }) },
      { recordOid: oid(7), blobOid: oid(8), record: textRecord('d.md', { createdBy: 'key_other000000000', deletedAt: '2024-06-02T00:00:00.000Z', deletedBy: 'key_other000000000' }) },
    ];
    await file.write({ head: oid(9), tree: oid(10), items, rules: [rule('vault')] });
    const read = await file.read();
    expect(read).to.deep.equal({ head: oid(9), tree: oid(10), items, rules: [rule('vault')] });
  });

  it('is read in slices: 20,000 items read back as written, the event loop turning between the slices', async () => {
    const file = new IndexSnapshotFile(fs, GITDIR, silentLogger);
    const oid = (n: number): string => n.toString(16).padStart(40, '0');
    const items: IndexEntry[] = Array.from({ length: 20_000 }, (_, i) => ({ recordOid: oid(2 * i + 1), blobOid: oid(2 * i + 2), record: textRecord(`bulk/${i}.md`) }));
    await file.write({ head: oid(1), tree: oid(2), items, rules: [] });
    const { result, turns } = await turnsDuring(() => file.read());
    expect(result?.items).to.deep.equal(items);
    // Four slices, a turn before each but the first (in one piece, the read let it turn none: memfs answers at once).
    expect(turns, 'turns of the event loop during the read').to.be.at.least(3);
  });

  it('is saved again while the server runs, every 10,000 commits', async () => {
    const repo = await open();
    const before = await fs.readFile(SNAPSHOT, 'utf8');
    // Batches of up to 256 commits (group commit) past 10,000; the save runs after the batch that
    // crosses it, so one more round is queued behind it.
    for (let round = 0; round < 41; round++) {
      await Promise.all(Array.from({ length: 256 }, (_, i) => repo.write((v) => putIntent(v, `bulk/${i}.md`, `round ${round}`))));
    }
    const during = await saved();
    expect(await fs.readFile(SNAPSHOT, 'utf8')).to.not.equal(before);
    expect(during.head).to.not.equal(repo.headCommit);
    await repo.close();
  });
});
