import { expect } from 'chai';
import { git } from '../support/git.js';
import { api, type TestServer } from '../support/server.js';
import { head, keyWithId, MALFORMED_BODIES, sendRaw, urlOf } from './adminApi.js';
import { del, expectError, MSG, put } from './helpers.js';
import { closeChecked, ok, refused, startRevertServer, wrote } from './revertApi.js';

/** POST /revert refusals: each bad input is a clear 4xx, and main stays exactly where it was. */

describe('HTTP revert: refusals', function () {
  this.timeout(120_000);

  let server: TestServer;
  let admin: string;
  let other: { secret: string; id: string; name: string };

  before(async () => ({ server, admin, other } = await startRevertServer()));
  after(() => closeChecked(server));

  describe('refusals (a clear 4xx, nothing changed)', () => {
    let purge: string;
    let rule: string;
    let writer: string;

    before(async () => {
      writer = await server.key('writer');
      await ok(put(server, admin, 'x/purged.md', { content: 'bye\n' }));
      await ok(del(server, admin, 'x/purged.md'));
      purge = await wrote(server, api(urlOf(server, '/trash/items/x/purged.md'), { method: 'DELETE', key: admin }));
      rule = await wrote(server, api(urlOf(server, '/folders/x'), { method: 'PUT', key: admin, body: { requiredReadPermission: 'knowledge:read' } }));
    });

    it('an unknown commit, a short or malformed id', async () => {
      const msg = 'commitId must be the full id of a commit on main of this organization';
      await refused(server, admin, { commitId: 'a'.repeat(40) }, 400, msg);
      await refused(server, admin, { commitId: (await head(server)).slice(0, 12) }, 400, msg);
      await refused(server, admin, { commitId: 'HEAD' }, 400, msg);
      await refused(server, admin, { commitId: '' }, 400, msg);
    });

    it('a commit that is not on main (an object of the repository, but no commit of the branch)', async () => {
      const tree = (await git(['rev-parse', 'main^{tree}'], { gitdir: server.gitdir() })).trim();
      await refused(server, admin, { commitId: tree }, 400, 'commitId must be the full id of a commit on main of this organization');
    });

    it('a purge (its history is gone), a folder rule, the first commit', async () => {
      await refused(server, admin, { commitId: purge }, 400, /purged x\/purged\.md: a purge cannot be reverted/);
      await refused(server, admin, { commitId: rule }, 400, /changed no item/);
      const first = (await git(['rev-list', '--max-parents=0', 'main'], { gitdir: server.gitdir() })).trim();
      await refused(server, admin, { commitId: first }, 400, /changed no item/);
    });

    it('since not a date, or in the future; an unknown key or one of another organization', async () => {
      const keyId = other.id;
      for (const since of ['yesterday', '2026-13-45', '12345', '2026-11-23T25:00:00Z', '']) {
        await refused(server, admin, { keyId, since }, 400, /^since must be an ISO 8601 date or time/);
      }
      const future = new Date(Date.now() + 3_600_000).toISOString();
      await refused(server, admin, { keyId, since: future }, 400, 'since is in the future: nothing was changed after it');
      await refused(server, admin, { keyId: 'key_0000000000000000', since: '2020-01-01' }, 404, 'API key not found');
      await server.org('elsewhere');
      const foreign = await keyWithId(server, 'admin', 'Foreigner', 'elsewhere');
      await refused(server, admin, { keyId: foreign.id, since: '2020-01-01' }, 404, 'API key not found');
    });

    it('both forms, neither, half of one; unknown fields and wrong types', async () => {
      const msg = 'give either commitId, or keyId and since (not both)';
      const commitId = await head(server);
      await refused(server, admin, {}, 400, msg);
      await refused(server, admin, { commitId, keyId: other.id, since: '2020-01-01' }, 400, msg);
      await refused(server, admin, { keyId: other.id }, 400, msg);
      await refused(server, admin, { since: '2020-01-01' }, 400, msg);
      await refused(server, admin, { commitId, since: '2020-01-01' }, 400, msg);
      await refused(server, admin, { commitId, path: 'x.md' }, 400, 'Unknown field "path"');
      await refused(server, admin, { commitId, force: 'yes' }, 400, 'force must be a boolean');
      await refused(server, admin, { commitId: 5 }, 400, 'commitId must be a string');
      for (const bad of MALFORMED_BODIES) {
        const before = await head(server);
        const r = await sendRaw(server, admin, 'POST', '/revert', bad.body, bad.contentType);
        expect(r.status, bad.name).to.equal(bad.status);
        expect(await head(server)).to.equal(before);
      }
      expectError(await api(urlOf(server, '/revert?x=1'), { method: 'POST', key: admin, body: { commitId } }), 400, 'Unknown query parameter "x"');
      expectError(await api(urlOf(server, '/revert'), { key: admin }), 405, 'Method not allowed');
    });

    it('a writer or reader is refused before anything is looked at; no key is 401', async () => {
      const commitId = await head(server);
      await refused(server, writer, { commitId }, 403, MSG.forbiddenAdmin);
      await refused(server, await server.key('reader'), { commitId }, 403, MSG.forbiddenAdmin);
      await refused(server, '', { commitId }, 401, MSG.invalidKey);
    });
  });
});
