import { expect } from 'chai';
import git from 'isomorphic-git';
import type { Volume } from 'memfs';
import { silentLogger } from '../../../src/common/log.js';
import type { FsPromises } from '../../../src/storage/fs/fs.js';
import { HistoryLog, type CommitFacts, type HistoryEntry } from '../../../src/storage/repo/historyLog.js';
import type { ItemRecord } from '../../../src/storage/repo/itemRecord.js';
import { OrgRepo, type ItemIntent, type RepoView, type WriteIntent } from '../../../src/storage/repo/orgRepo.js';
import { OrgStore } from '../../../src/storage/repo/orgStore.js';
import { readRef } from '../../../src/storage/git/refs.js';
import { memoryFs } from '../../support/memfs.js';
import { textRecord } from '../../support/records.js';
import { hostGit } from '../../support/git.js';
import { moveToIntent } from '../../support/intents.js';
import { turnsDuring } from '../../support/turns.js';

/**
 * The history log: one entry per commit of main,
 * kept in `<gitdir>/knowledge-history.jsonl` and caught up from git at load.
 * Built by real OrgRepo writes on memfs; reloads go through HistoryLog.load
 * with a counting readCommit, so what is read from git is visible.
 */

const DATA = '/data';
const ORG = 'acme';
const GITDIR = `${DATA}/orgs/${ORG}.git`;
const LOG = `${GITDIR}/knowledge-history.jsonl`;
const AUTHOR = { name: 'ci bot', email: 'key_0123456789abcdef' };
const HEADER = '{"knowledgeHistoryLog":1}';

const record = (path: string, when: Date): ItemRecord =>
  textRecord(path, { id: `id:${path}`, when, createdBy: AUTHOR.email, updatedBy: AUTHOR.email });

let clock = 0;
const tick = (): Date => new Date(Date.UTC(2024, 2, 1, 10, 0, clock++));

function putIntent(view: RepoView, path: string, content: string, summary?: string): WriteIntent {
  const current = view.get(path);
  const when = tick();
  return {
    mutation: 'put',
    path,
    record: current ? { ...current.record, updatedAt: when.toISOString() } : record(path, when),
    content,
    action: current ? 'update' : 'create',
    summary: summary ?? (current ? `Update ${path}` : `Create ${path}`),
    author: AUTHOR,
    when,
  };
}

function moveIntent(view: RepoView, path: string, mutation: 'trash' | 'restore'): WriteIntent {
  const current = view.get(path);
  if (!current) throw new Error(`test setup: nothing at ${path}`);
  const when = tick();
  const trashed = mutation === 'trash';
  const intent: ItemIntent = {
    mutation,
    path,
    record: { ...current.record, deletedAt: trashed ? when.toISOString() : null, deletedBy: trashed ? AUTHOR.email : null },
    action: trashed ? 'delete' : 'restore',
    summary: `${mutation} ${path}`,
    author: AUTHOR,
    when,
  };
  return intent;
}

/** What OrgRepo hands HistoryLog.load, read with isomorphic-git; counts and names every commit read. */
function readCommitSpy(fs: FsPromises, gitdir = GITDIR): { read: (oid: string) => Promise<CommitFacts>; calls: string[] } {
  const calls: string[] = [];
  const read = async (oid: string): Promise<CommitFacts> => {
    calls.push(oid);
    const { commit } = await git.readCommit({ fs: { promises: fs }, gitdir, oid });
    return { parent: commit.parent[0] ?? null, message: commit.message, author: commit.author };
  };
  return { read, calls };
}

/** The commits of main, oldest first, as C-git-compatible isomorphic-git reads them. */
async function commitsOfMain(fs: FsPromises, gitdir = GITDIR): Promise<Array<{ oid: string; parent: string | null; message: string }>> {
  const log = await git.log({ fs: { promises: fs }, gitdir, ref: 'refs/heads/main' });
  return log.reverse().map((c) => ({ oid: c.oid, parent: c.commit.parent[0] ?? null, message: c.commit.message }));
}

describe('storage/historyLog', () => {
  let vol: Volume;
  let fs: FsPromises;
  let repo: OrgRepo;

  const put = (path: string, content: string, summary?: string): Promise<unknown> => repo.write((v) => putIntent(v, path, content, summary));
  const load = async (spy: { read: (oid: string) => Promise<CommitFacts> }, gitdir = GITDIR): Promise<HistoryLog> =>
    HistoryLog.load({ fs, gitdir, head: await readRef(fs, gitdir), readCommit: spy.read, logger: silentLogger });
  const logText = (): string => vol.readFileSync(LOG, 'utf8') as string;
  const logLines = (): string[] => logText().split('\n').filter((l) => l !== '');

  beforeEach(async () => {
    clock = 0;
    ({ vol, fs } = memoryFs());
    await new OrgStore({ git: hostGit, fs, dataDir: DATA, logger: silentLogger }).create(ORG, new Date('2024-03-01T09:00:00Z'));
    repo = await OrgRepo.open({ orgId: ORG, fs, gitdir: GITDIR, logger: silentLogger });
  });

  afterEach(async () => {
    await repo.close();
  });

  /** 10 commits after the organization's first: creates, updates, a trash and a restore, and a burst of one group commit. */
  async function writeSome(): Promise<void> {
    await put('docs/guide.md', '# Guide\n');
    await put('docs/guide.md', '# Guide v2\n', 'Reword the guide\n\nA longer explanation\nover two lines.');
    await put('notes/a.md', 'a');
    await repo.write((v) => moveIntent(v, 'notes/a.md', 'trash'));
    await repo.write((v) => moveIntent(v, 'notes/a.md', 'restore'));
    await put('docs/guide.md', '# Guide v3\n');
    await Promise.all([put('burst/1.md', '1'), put('burst/2.md', '2'), put('burst/1.md', '1b'), put('docs/guide.md', 'v4')]);
  }

  /**
   * Every entry of the log, oldest first. HistoryLog reads by commit, so the list is the
   * root's entry (whose line is checked in the file, the only place it is visible) then `after(root)`.
   */
  async function entriesOf(log: HistoryLog): Promise<HistoryEntry[]> {
    const [root] = await commitsOfMain(fs);
    const rootId = root?.oid as string;
    expect(log.has(rootId), 'the root commit is in the log').to.equal(true);
    const rest = log.after(rootId) as HistoryEntry[];
    expect(rest[0]?.parent ?? rootId).to.equal(rootId);
    expect(log.size).to.equal(1 + rest.length);
    const rootEntry: HistoryEntry = {
      commitId: rootId,
      parent: null,
      message: 'Create organization acme',
      author: { name: 'knowledge-store', email: 'knowledge-store' },
      timestamp: Date.parse('2024-03-01T09:00:00Z') / 1000,
    };
    expect(JSON.parse(logLines()[1] as string)).to.deep.equal([rootId, null, null, null, null, rootEntry.message, 'knowledge-store', 'knowledge-store', rootEntry.timestamp]);
    return [rootEntry, ...rest];
  }

  /** The newest entry (the head's). */
  const lastEntry = async (log: HistoryLog): Promise<HistoryEntry> => (await entriesOf(log)).at(-1) as HistoryEntry;

  describe('after writes', () => {
    it('has one entry per commit of main, in order, each continuing its parent', async () => {
      await writeSome();
      const commits = await commitsOfMain(fs);
      expect(commits).to.have.length(11);
      const log = repo.history;
      expect(log.size).to.equal(commits.length);
      expect(log.head).to.equal(commits[commits.length - 1]?.oid);
      expect(log.head).to.equal(repo.headCommit);
      const entries = await entriesOf(log);
      expect(entries.map((e) => e.commitId)).to.deep.equal(commits.map((c) => c.oid));
      expect(entries.map((e) => e.parent)).to.deep.equal(commits.map((c) => c.parent));
      for (const c of commits) expect(log.has(c.oid)).to.equal(true);
      // The file: the header, then one line per commit.
      expect(logLines()[0]).to.equal(HEADER);
      expect(logLines()).to.have.length(1 + commits.length);
      expect(logLines().slice(1).map((l) => (JSON.parse(l) as string[])[0])).to.deep.equal(commits.map((c) => c.oid));
    });

    it('parses the item trailers of every commit (id, path, action) and keeps the message without them', async () => {
      await writeSome();
      const entries = await entriesOf(repo.history);
      const items = entries.map((e) => (e.item ? `${e.item.action} ${e.item.id} ${e.item.path}` : null));
      expect(items).to.deep.equal([
        null,
        'create id:docs/guide.md docs/guide.md',
        'update id:docs/guide.md docs/guide.md',
        'create id:notes/a.md notes/a.md',
        'delete id:notes/a.md notes/a.md',
        'restore id:notes/a.md notes/a.md',
        'update id:docs/guide.md docs/guide.md',
        'create id:burst/1.md burst/1.md',
        'create id:burst/2.md burst/2.md',
        'update id:burst/1.md burst/1.md',
        'update id:docs/guide.md docs/guide.md',
      ]);
      expect(entries[2]?.message).to.equal('Reword the guide\n\nA longer explanation\nover two lines.');
      expect(entries[4]?.message).to.equal('trash notes/a.md');
      for (const e of entries.slice(1)) {
        expect(e.message).to.not.match(/Item-(Id|Path|Action):/);
        expect(e.author).to.deep.equal(AUTHOR);
      }
      // Whole seconds, from the intent's time.
      expect(entries[1]?.timestamp).to.equal(Date.UTC(2024, 2, 1, 10, 0, 0) / 1000);
      // The raw commit messages do carry the trailers the entries were parsed from.
      const raw = await commitsOfMain(fs);
      expect(raw[1]?.message).to.match(/\n\nItem-Id: id:docs\/guide\.md\nItem-Path: docs\/guide\.md\nItem-Action: create\n$/);
    });

    it('indexes each item: its commits in order, version 1 first', async () => {
      await writeSome();
      const guide = repo.history.itemHistory('id:docs/guide.md');
      expect(guide.map((e) => e.item?.action)).to.deep.equal(['create', 'update', 'update', 'update']);
      expect(guide[guide.length - 1]?.commitId).to.equal(repo.headCommit);
      expect(repo.history.itemHistory('id:notes/a.md').map((e) => e.item?.action)).to.deep.equal(['create', 'delete', 'restore']);
      expect(repo.history.itemHistory('no such id')).to.deep.equal([]);
    });
  });

  describe('moves', () => {
    const move = (from: string, to: string): Promise<unknown> => repo.write((v) => moveToIntent(v, from, to, tick()));

    it('an entry knows the path the item left; the item keeps one history across the move', async () => {
      await put('a/old.md', 'text');
      await move('a/old.md', 'b/new.md');
      await put('b/new.md', 'text 2');
      const versions = repo.history.itemHistory('id:a/old.md');
      expect(versions.map((e) => e.item)).to.deep.equal([
        { id: 'id:a/old.md', path: 'a/old.md', action: 'create' },
        { id: 'id:a/old.md', path: 'b/new.md', action: 'move', from: 'a/old.md' },
        { id: 'id:a/old.md', path: 'b/new.md', action: 'update' },
      ]);
      // In the file, a move's line has a tenth field; the others keep their nine.
      const lines = logLines().slice(1).map((l) => JSON.parse(l) as unknown[]);
      expect(lines.map((l) => l.length)).to.deep.equal([9, 9, 10, 9]);
      expect(lines[2]?.[9]).to.equal('a/old.md');
    });

    it('reads back the same from the file (no git read) and from git (file deleted)', async () => {
      await put('a/old.md', 'text');
      await move('a/old.md', 'b/new.md');
      const before = await entriesOf(repo.history);
      const fromFile = readCommitSpy(fs);
      expect(await entriesOf(await load(fromFile))).to.deep.equal(before);
      expect(fromFile.calls).to.deep.equal([]);
      vol.unlinkSync(LOG);
      const fromGit = readCommitSpy(fs);
      const rebuilt = await load(fromGit);
      expect(fromGit.calls.length).to.be.greaterThan(0);
      expect(await entriesOf(rebuilt)).to.deep.equal(before);
      expect(rebuilt.itemHistory('id:a/old.md').at(-1)?.item?.from).to.equal('a/old.md');
    });
  });

  describe('a commit of several items', () => {
    it('names every item; each item\'s history has the commit (with its own change); the file keeps it and git rebuilds it', async () => {
      await put('a.md', 'one');
      await put('b.md', 'two');
      const result = await repo.write((v) => {
        const scratch = v.scratch();
        const items: ItemIntent[] = [];
        for (const intent of [putIntent(scratch, 'a.md', 'one again'), putIntent(scratch, 'c.md', 'three')]) {
          items.push(intent as ItemIntent);
          scratch.apply(intent as ItemIntent);
        }
        const moved = moveToIntent(scratch, 'c.md', 'd/c.md', tick()) as ItemIntent;
        items.push(moved);
        return { mutation: 'commit', items, summary: 'Several', author: AUTHOR, when: tick() };
      });
      expect(result.entries?.map((e) => e?.record.path)).to.deep.equal(['a.md', 'c.md', 'd/c.md']);
      const last = repo.history.itemHistory('id:a.md').at(-1);
      expect(last?.commitId).to.equal(result.commitId);
      expect(last?.item).to.deep.equal({ id: 'id:a.md', path: 'a.md', action: 'update' });
      // Created and moved in one commit: one version, a create at where it ended.
      expect(repo.history.itemHistory('id:c.md').map((e) => e.item)).to.deep.equal([{ id: 'id:c.md', path: 'd/c.md', action: 'create' }]);
      expect(repo.get('c.md')).to.equal(undefined);
      expect(repo.get('d/c.md')?.record.id).to.equal('id:c.md');
      const before = await entriesOf(repo.history);
      expect(before.at(-1)?.items?.length).to.equal(2);
      const fromFile = readCommitSpy(fs);
      expect(await entriesOf(await load(fromFile))).to.deep.equal(before);
      expect(fromFile.calls).to.deep.equal([]);
      vol.unlinkSync(LOG);
      expect(await entriesOf(await load(readCommitSpy(fs)))).to.deep.equal(before);
    });
  });

  describe('reloading', () => {
    it('with the log file intact reads no commit from git', async () => {
      await writeSome();
      const before = await entriesOf(repo.history);
      const textBefore = logText();
      const spy = readCommitSpy(fs);
      const log = await load(spy);
      expect(spy.calls).to.deep.equal([]);
      expect(await entriesOf(log)).to.deep.equal(before);
      expect(log.itemHistory('id:docs/guide.md')).to.deep.equal(repo.history.itemHistory('id:docs/guide.md'));
      expect(logText()).to.equal(textBefore);
    });

    it('with the file deleted rebuilds the same log from git, reading every commit once', async () => {
      await writeSome();
      const before = await entriesOf(repo.history);
      const textBefore = logText();
      vol.unlinkSync(LOG);
      const spy = readCommitSpy(fs);
      const log = await load(spy);
      const commits = await commitsOfMain(fs);
      expect(spy.calls).to.have.length(commits.length);
      expect(new Set(spy.calls)).to.deep.equal(new Set(commits.map((c) => c.oid)));
      expect(await entriesOf(log)).to.deep.equal(before);
      expect(log.itemHistory('id:notes/a.md')).to.deep.equal(repo.history.itemHistory('id:notes/a.md'));
      // Written back byte for byte; a second load then reads nothing.
      expect(logText()).to.equal(textBefore);
      const again = readCommitSpy(fs);
      await load(again);
      expect(again.calls).to.deep.equal([]);
    });

    it('with the last line cut mid-way reads exactly the missing commit', async () => {
      await writeSome();
      const before = await entriesOf(repo.history);
      const textBefore = logText();
      const lines = logLines();
      const last = lines[lines.length - 1] as string;
      vol.writeFileSync(LOG, `${lines.slice(0, -1).join('\n')}\n${last.slice(0, Math.floor(last.length / 2))}`);
      const spy = readCommitSpy(fs);
      const log = await load(spy);
      expect(spy.calls).to.deep.equal([repo.headCommit]);
      expect(await entriesOf(log)).to.deep.equal(before);
      expect(logText()).to.equal(textBefore);
    });

    it('with the last three lines lost and a fourth cut reads exactly those four commits, newest first', async () => {
      await writeSome();
      const before = await entriesOf(repo.history);
      const lines = logLines();
      const cut = lines[lines.length - 4] as string;
      vol.writeFileSync(LOG, `${lines.slice(0, -4).join('\n')}\n${cut.slice(0, 10)}`);
      const spy = readCommitSpy(fs);
      const log = await load(spy);
      expect(spy.calls).to.deep.equal(before.slice(-4).map((e) => e.commitId).reverse());
      expect(await entriesOf(log)).to.deep.equal(before);
    });

    it('keeps the lines before a damaged one in the middle (not JSON, or two values on one line) and reads the rest from git', async () => {
      await writeSome();
      const before = await entriesOf(repo.history);
      for (const damage of ['{"torn', '1,2']) {
        const lines = logLines();
        lines[6] = damage;
        vol.writeFileSync(LOG, `${lines.join('\n')}\n`);
        const spy = readCommitSpy(fs);
        const log = await load(spy);
        // Line 6 is commit 6 (line 0 is the header): it and every later commit are read again.
        expect(spy.calls, damage).to.deep.equal(before.slice(5).map((e) => e.commitId).reverse());
        expect(await entriesOf(log)).to.deep.equal(before);
      }
    });

    it('read from its file, shares what its entries repeat: one author object per author, one change for a commit\'s first item', async () => {
      await writeSome();
      const several = await repo.write((v) => {
        const scratch = v.scratch();
        const items = [putIntent(scratch, 'x.md', 'x'), putIntent(scratch, 'y.md', 'y')] as ItemIntent[];
        return { mutation: 'commit', items, summary: 'Several', author: AUTHOR, when: tick() };
      });
      const log = await load(readCommitSpy(fs));
      const entries = log.after((await commitsOfMain(fs))[0]?.oid as string) as HistoryEntry[];
      const authors = new Set(entries.map((e) => e.author));
      expect([...authors].map((a) => a.email)).to.deep.equal([AUTHOR.email]);
      const last = log.get(several.commitId as string);
      expect(last?.item).to.equal(last?.items?.[0]);
      // Each commit's parent is the entry before's own commit id (the file holds both).
      entries.slice(1).forEach((e, i) => expect(e.parent).to.equal(entries[i]?.commitId));
      expect(log.itemHistory('id:docs/guide.md').map((e) => e.item?.action)).to.deep.equal(['create', 'update', 'update', 'update']);
    });

    it('stops trusting the file at a line that does not continue the chain', async () => {
      await writeSome();
      const before = await entriesOf(repo.history);
      const lines = logLines();
      // Line of commit 6 says its parent is something else: it and every later line are re-read.
      const row = JSON.parse(lines[6] as string) as unknown[];
      row[1] = 'f'.repeat(40);
      lines[6] = JSON.stringify(row);
      vol.writeFileSync(LOG, `${lines.join('\n')}\n`);
      const spy = readCommitSpy(fs);
      const log = await load(spy);
      expect(spy.calls).to.deep.equal(before.slice(5).map((e) => e.commitId).reverse());
      expect(await entriesOf(log)).to.deep.equal(before);
    });

    it('with a log ahead of the branch (refs restored from an older backup) cuts it back to the head without reading git', async () => {
      await writeSome();
      const before = await entriesOf(repo.history);
      const older = before[6] as HistoryEntry;
      vol.writeFileSync(`${GITDIR}/refs/heads/main`, `${older.commitId}\n`);
      const spy = readCommitSpy(fs);
      const log = await load(spy);
      expect(spy.calls).to.deep.equal([]);
      expect(log.head).to.equal(older.commitId);
      expect(log.size).to.equal(7);
      expect(log.has(before[7]?.commitId as string)).to.equal(false);
      expect(log.itemHistory('id:burst/1.md')).to.deep.equal([]);
      expect(log.itemHistory('id:docs/guide.md')).to.have.length(3);
      // The file is cut too: the dropped commits do not come back on the next load.
      expect(logLines()).to.have.length(1 + 7);
    });

    it('with a header of another format rebuilds everything', async () => {
      await writeSome();
      const before = await entriesOf(repo.history);
      vol.writeFileSync(LOG, logText().replace(HEADER, '{"knowledgeHistoryLog":2}'));
      const spy = readCommitSpy(fs);
      const log = await load(spy);
      expect(spy.calls).to.have.length(before.length);
      expect(await entriesOf(log)).to.deep.equal(before);
      expect(logLines()[0]).to.equal(HEADER);
    });

    it('with a log copied from another repository rebuilds from git, keeping none of the other history', async () => {
      await writeSome();
      const before = await entriesOf(repo.history);
      const textBefore = logText();
      // Another organization with its own commits (a different first commit: nothing in common).
      await new OrgStore({ git: hostGit, fs, dataDir: DATA, logger: silentLogger }).create('other', new Date('2024-05-05T00:00:00Z'));
      const otherDir = `${DATA}/orgs/other.git`;
      const other = await OrgRepo.open({ orgId: 'other', fs, gitdir: otherDir, logger: silentLogger });
      await other.write((v) => putIntent(v, 'docs/guide.md', 'a different guide'));
      await other.write((v) => putIntent(v, 'elsewhere.md', 'x'));
      await other.close();
      const foreign = vol.readFileSync(`${otherDir}/knowledge-history.jsonl`, 'utf8') as string;
      vol.writeFileSync(LOG, foreign);

      const spy = readCommitSpy(fs);
      const log = await load(spy);
      expect(spy.calls).to.have.length(before.length);
      expect(await entriesOf(log)).to.deep.equal(before);
      for (const line of foreign.split('\n').slice(1).filter((l) => l !== '')) {
        expect(log.has((JSON.parse(line) as string[])[0] as string)).to.equal(false);
      }
      expect(log.itemHistory('id:elsewhere.md')).to.deep.equal([]);
      expect(log.itemHistory('id:docs/guide.md')).to.have.length(4);
      expect(logText()).to.equal(textBefore);
    });

    it('with a log of a diverged history sharing the first commit keeps that prefix and replaces the rest', async () => {
      // Two repositories from the same first commit (same org id and time), then different writes.
      const twinDir = `${DATA}/twin/orgs/${ORG}.git`;
      await new OrgStore({ git: hostGit, fs, dataDir: `${DATA}/twin`, logger: silentLogger }).create(ORG, new Date('2024-03-01T09:00:00Z'));
      const twin = await OrgRepo.open({ orgId: ORG, fs, gitdir: twinDir, logger: silentLogger });
      expect(twin.headCommit).to.equal(repo.headCommit);
      await twin.write((v) => putIntent(v, 'twin-only.md', 'x'));
      await twin.write((v) => putIntent(v, 'twin-only.md', 'y'));
      await twin.close();
      await writeSome();
      const before = await entriesOf(repo.history);
      vol.writeFileSync(LOG, vol.readFileSync(`${twinDir}/knowledge-history.jsonl`, 'utf8'));

      const spy = readCommitSpy(fs);
      const log = await load(spy);
      expect(spy.calls).to.deep.equal(before.slice(1).map((e) => e.commitId).reverse());
      expect(await entriesOf(log)).to.deep.equal(before);
      expect(log.itemHistory('id:twin-only.md')).to.deep.equal([]);
      expect(log.size).to.equal(before.length);
    });
  });

  it('is read in slices: 20,000 commits loaded from the file alone, the event loop turning between the slices', async () => {
    const commits = Array.from({ length: 20_000 }, (_, i) => (i + 1).toString(16).padStart(40, '0'));
    const lines = commits.map((id, i) =>
      JSON.stringify([id, i === 0 ? null : commits[i - 1], `itm_${i}`, `bulk/${i}.md`, 'create', `put bulk/${i}.md`, 'Agent', 'agent@example.org', 1709283600 + i]),
    );
    const gitdir = '/data/orgs/bulk.git';
    await fs.mkdir(gitdir, { recursive: true });
    await fs.writeFile(`${gitdir}/knowledge-history.jsonl`, `${['{"knowledgeHistoryLog":1}', ...lines].join('\n')}\n`);
    const never = async (oid: string): Promise<CommitFacts> => expect.fail(`read commit ${oid} from git`);
    const { result: log, turns } = await turnsDuring(() => HistoryLog.load({ fs, gitdir, head: commits[commits.length - 1] as string, readCommit: never, logger: silentLogger }));
    expect(log.size).to.equal(20_000);
    expect(log.itemHistory('itm_12345').map((e) => e.commitId)).to.deep.equal([commits[12_345]]);
    // Read, then indexed: four slices each, a turn before each but the first.
    expect(turns, 'turns of the event loop during the load').to.be.at.least(6);
  });

  describe('after(commitId)', () => {
    it('returns the entries after a commit, oldest first; none after the head; undefined for an unknown id', async () => {
      await writeSome();
      const entries = await entriesOf(repo.history);
      const log = repo.history;
      expect(log.after(entries[7]?.commitId as string)?.map((e) => e.commitId)).to.deep.equal(entries.slice(8).map((e) => e.commitId));
      expect(log.after(entries[0]?.commitId as string)).to.have.length(entries.length - 1);
      expect(log.after(repo.headCommit as string)).to.deep.equal([]);
      expect(log.after('0'.repeat(40))).to.equal(undefined);
      expect(log.after('not a commit')).to.equal(undefined);
      expect(log.after('')).to.equal(undefined);
      // A commit that is in the repository but not on main (dangling, off an old head) is unknown too.
      const sig = { name: 'x', email: 'y', timestamp: 0, timezoneOffset: 0 };
      const { commit: headCommit } = await git.readCommit({ fs: { promises: fs }, gitdir: GITDIR, oid: entries[2]?.commitId as string });
      const dangling = await git.writeCommit({
        fs: { promises: fs },
        gitdir: GITDIR,
        commit: { tree: headCommit.tree, parent: [entries[2]?.commitId as string], author: sig, committer: sig, message: 'side\n' },
      });
      expect(vol.existsSync(`${GITDIR}/objects/${dangling.slice(0, 2)}/${dangling.slice(2)}`)).to.equal(true);
      expect(log.after(dangling)).to.equal(undefined);
      expect(log.has(dangling)).to.equal(false);
    });

    it('answers the same after a rebuild from git', async () => {
      await writeSome();
      const entries = await entriesOf(repo.history);
      vol.unlinkSync(LOG);
      const log = await load(readCommitSpy(fs));
      expect(log.after(entries[3]?.commitId as string)).to.deep.equal(entries.slice(4));
      expect(log.after('1'.repeat(40))).to.equal(undefined);
    });
  });

  describe('forged trailers in a client message', () => {
    const FORGED = 'Looks harmless\n\nItem-Id: forged-id\nItem-Path: secret/plans.md\nItem-Action: purge\n\nSigned-off-by: someone';

    it('an item commit names the real item, and the forged lines stay in the message', async () => {
      await put('docs/guide.md', 'x', FORGED);
      const check = async (log: HistoryLog): Promise<void> => {
        const last = await lastEntry(log);
        expect(last.commitId).to.equal(repo.headCommit);
        expect(last.item).to.deep.equal({ id: 'id:docs/guide.md', path: 'docs/guide.md', action: 'create' });
        expect(last.message).to.equal(FORGED);
        expect(log.itemHistory('forged-id')).to.deep.equal([]);
        expect(log.itemHistory('id:docs/guide.md').map((e) => e.commitId)).to.deep.equal([repo.headCommit]);
      };
      await check(repo.history);
      vol.unlinkSync(LOG);
      await check(await load(readCommitSpy(fs)));
    });

    it('a commit without an item (a folder rule) does not become an entry of the forged item', async () => {
      const when = tick();
      await repo.write(() => ({
        mutation: 'folderRule',
        folder: 'secret',
        rule: { folder: 'secret', requiredReadPermission: 'admin', requiredWritePermission: 'admin', updatedAt: when.toISOString(), updatedBy: AUTHOR.email },
        summary: FORGED,
        author: AUTHOR,
        when,
      }));
      const check = async (log: HistoryLog): Promise<void> => {
        const last = await lastEntry(log);
        expect(last.commitId).to.equal(repo.headCommit);
        expect(last.item).to.equal(undefined);
        expect(last.message).to.equal(FORGED);
        expect(log.itemHistory('forged-id')).to.deep.equal([]);
      };
      await check(repo.history);
      vol.unlinkSync(LOG);
      await check(await load(readCommitSpy(fs)));
    });
  });
});
