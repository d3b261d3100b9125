import { expect } from 'chai';
import type { CommitEvent, WalkedCommit } from '../../src/domain/events.js';
import type { Actor } from '../../src/domain/keys.js';
import { SharedChunks, WALK_TURN, walkChunk, type EventWalker } from '../../src/http/events/eventChunks.js';
import type { OrgRepo } from '../../src/storage/repo/orgRepo.js';

/**
 * A feed over a fixed list of commits: commit i is visible to a key scoped to `odd/` only when i is odd,
 * and to an unscoped key always. Counts the walks, so a test sees what was shared.
 */
function fakeFeed(commits: string[]): EventWalker & { walks: number } {
  const feed = {
    walks: 0,
    async *walk({ actor, cursor }: { repo: OrgRepo; actor: Actor; cursor: string | null }): AsyncGenerator<WalkedCommit> {
      feed.walks++;
      if (cursor === null) return;
      for (const [i, commitId] of commits.entries()) {
        if (i <= commits.indexOf(cursor)) continue;
        const visible = actor.scopes === undefined || i % 2 === 1;
        const event: CommitEvent | null = visible ? { organizationId: 'o', commitId, timestamp: 't', changes: [] } : null;
        yield { commitId, event, json: event && JSON.stringify(event) };
      }
    },
  };
  return feed;
}

const actor = (keyId: string, scopes?: string[]): Actor => ({ keyId, keyName: keyId, orgId: 'o', role: 'reader', ...(scopes ? { scopes } : {}) });
/** The stream only asks a repository its head (the walk itself is the fake feed's). */
const repoAt = (head: string): OrgRepo & { headCommit: string } => ({ headCommit: head }) as unknown as OrgRepo & { headCommit: string };
const ids = (bytes: Buffer): string[] => [...bytes.toString().matchAll(/^id: (\S+)$/gm)].map((m) => m[1] as string);
const commitsNamed = (n: number): string[] => Array.from({ length: n }, (_, i) => `c${i}`);

describe('Event chunks: the turns streams share', () => {
  it('streams that see alike at the same commit get one walk and the very same Buffer', async () => {
    const feed = fakeFeed(commitsNamed(5));
    const shared = new SharedChunks(feed, 1 << 20);
    const repo = repoAt('c4');
    const [a, b] = await Promise.all([shared.next({ repo, actor: actor('k1'), cursor: 'c1' }), shared.next({ repo, actor: actor('k2'), cursor: 'c1' })]);
    expect(feed.walks).to.equal(1);
    expect(a?.bytes).to.equal(b?.bytes);
    expect(ids(a?.bytes as Buffer)).to.deep.equal(['c2', 'c3', 'c4']);
    expect(a).to.include({ lastSent: 'c4', cursor: 'c4', walked: 3, full: false });
  });

  it('other scopes or another cursor walk apart, each getting exactly its own events', async () => {
    const feed = fakeFeed(commitsNamed(6));
    const shared = new SharedChunks(feed, 1 << 20);
    const repo = repoAt('c5');
    const whole = await shared.next({ repo, actor: actor('k1'), cursor: 'c0' });
    const scoped = await shared.next({ repo, actor: actor('k2', ['odd/']), cursor: 'c0' });
    const later = await shared.next({ repo, actor: actor('k3'), cursor: 'c3' });
    const scopedLater = await shared.next({ repo, actor: actor('k4', ['odd/']), cursor: 'c3' });
    expect(feed.walks).to.equal(4);
    expect(ids(whole?.bytes as Buffer)).to.deep.equal(['c1', 'c2', 'c3', 'c4', 'c5']);
    expect(ids(scoped?.bytes as Buffer)).to.deep.equal(['c1', 'c3', 'c5']);
    expect(ids(later?.bytes as Buffer)).to.deep.equal(['c4', 'c5']);
    expect(ids(scopedLater?.bytes as Buffer)).to.deep.equal(['c5']);
    // A commit it may see nothing of moves its cursor and sends nothing.
    const none = await shared.next({ repo, actor: actor('k5', ['odd/']), cursor: 'c4' });
    expect(none).to.include({ lastSent: 'c5', cursor: 'c5', walked: 1 });
    const nothing = await walkChunk({ feed, repo, actor: actor('k6', ['odd/']), cursor: 'c3', room: 1 << 20 });
    expect(ids(nothing?.bytes as Buffer)).to.deep.equal(['c5']);
  });

  it('a new head starts afresh: a stream woken again walks the new commits', async () => {
    const commits = commitsNamed(3);
    const feed = fakeFeed(commits);
    const shared = new SharedChunks(feed, 1 << 20);
    const repo = repoAt('c2');
    const first = await shared.next({ repo, actor: actor('k1'), cursor: 'c1' });
    expect(ids(first?.bytes as Buffer)).to.deep.equal(['c2']);
    commits.push('c3');
    repo.headCommit = 'c3';
    const second = await shared.next({ repo, actor: actor('k2'), cursor: 'c1' });
    expect(feed.walks).to.equal(2);
    expect(ids(second?.bytes as Buffer)).to.deep.equal(['c2', 'c3']);
  });

  it('a turn stops at WALK_TURN commits, or after the event that fills the room (full), or when told to stop', async () => {
    const feed = fakeFeed(commitsNamed(WALK_TURN + 10));
    const repo = repoAt(`c${WALK_TURN + 9}`);
    const turn = await walkChunk({ feed, repo, actor: actor('k1'), cursor: 'c0', room: 1 << 20 });
    expect(turn).to.include({ walked: WALK_TURN, cursor: `c${WALK_TURN}`, full: false });
    expect(ids(turn?.bytes as Buffer)).to.have.length(WALK_TURN);
    const one = Buffer.byteLength(`id: c1\ndata: ${JSON.stringify({ organizationId: 'o', commitId: 'c1', timestamp: 't', changes: [] })}\n\n`);
    const filled = await walkChunk({ feed, repo, actor: actor('k1'), cursor: 'c0', room: one + 1 });
    expect(filled).to.include({ cursor: 'c2', lastSent: 'c2', full: true });
    expect(ids(filled?.bytes as Buffer)).to.deep.equal(['c1', 'c2']);
    let calls = 0;
    expect(await walkChunk({ feed, repo, actor: actor('k1'), cursor: 'c0', room: 1 << 20, stop: () => ++calls > 3 })).to.equal(null);
  });

  it('a long turn lets the event loop read its I/O between slices of commits (a PUT arriving meanwhile waits for one slice)', async () => {
    const feed = fakeFeed(commitsNamed(WALK_TURN + 1));
    let walked = 0;
    const counting: EventWalker = {
      async *walk(args) {
        for await (const commit of feed.walk(args)) {
          walked += 1;
          yield commit;
        }
      },
    };
    // A check-phase callback stands for the I/O the poll phase would read: without the slices the whole turn runs
    // in microtasks, before it.
    let walkedWhenLooked = -1;
    setImmediate(() => (walkedWhenLooked = walked));
    const turn = await walkChunk({ feed: counting, repo: repoAt(`c${WALK_TURN}`), actor: actor('k1'), cursor: 'c0', room: 1 << 20 });
    expect(turn?.walked).to.equal(WALK_TURN);
    expect(walkedWhenLooked).to.be.within(1, WALK_TURN - 1);
  });
});
