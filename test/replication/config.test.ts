import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { ConfigError, loadConfig } from '../../src/app/config.js';
import { parseRemotes, remotesOf } from '../../src/storage/replication/remotes.js';
import { ensureBuilt, spawnCli } from '../support/child.js';
import { tmpDir } from '../support/tmp.js';

describe('replication settings (KNOWLEDGE_REPLICATE)', () => {
  it('takes git://, http(s)://, ssh://, file:// URLs and absolute paths, for every organization ({org}) or for one (org=url)', () => {
    const raw = 'git://mirror.example/{org}.git, https://git.example/backup/{org}.git ssh://git@host:2222/srv/{org}.git\nfile:///srv/mirrors/{org}.git,/srv/{org}.git acme=git://other.example/acme-only.git';
    const remotes = parseRemotes(raw);
    expect(remotes).to.have.length(6);
    expect(remotes[5]).to.deep.equal({ org: 'acme', url: 'git://other.example/acme-only.git' });
    expect(remotesOf({ remotes }, 'acme')).to.deep.equal([
      'git://mirror.example/acme.git',
      'https://git.example/backup/acme.git',
      'ssh://git@host:2222/srv/acme.git',
      'file:///srv/mirrors/acme.git',
      '/srv/acme.git',
      'git://other.example/acme-only.git',
    ]);
    expect(remotesOf({ remotes }, 'beta')).to.have.length(5);
    const config = loadConfig({ KNOWLEDGE_REPLICATE: 'git://m/{org}.git', KNOWLEDGE_REPLICATE_RETRY_BASE_MS: '50', KNOWLEDGE_REPLICATE_TIMEOUT_MS: '5000' });
    expect(config.replication).to.deep.equal({ remotes: [{ org: null, url: 'git://m/{org}.git' }], timeoutMs: 5000, retryBaseMs: 50, retryMaxMs: 300_000, concurrency: 4, intervalMs: 0 });
    expect(loadConfig({}).replication.remotes).to.deep.equal([]);
  });

  it('refuses what is not a git remote, a URL shared by every organization, and bad numbers, with a message that says which and why', () => {
    const refused: Array<[string, RegExp]> = [
      ['ftp://host/{org}.git', /"ftp:\/\/host\/\{org\}.git" is not a git remote URL \(the scheme ftp is not one of git, http, https, ssh, file\)/],
      ['mirrors/{org}.git', /not a URL or an absolute path/],
      ['git@github.com:me/{org}.git', /scp-like user@host:path; write ssh:\/\/user@host\/path/],
      ['git:///{org}.git', /no host/],
      ['git://mirror.example/all.git', /is for every organization but has no \{org\} in it; add \{org\}, or write <org>=git:\/\/mirror.example\/all.git/],
      ['git://m/{org}.git git://m/{org}.git', /listed twice/],
    ];
    for (const [raw, why] of refused) expect(() => loadConfig({ KNOWLEDGE_REPLICATE: raw }), raw).to.throw(ConfigError, why).with.property('message').that.matches(/^KNOWLEDGE_REPLICATE: /);
    // A password in a refused URL is not repeated in the message.
    expect(() => loadConfig({ KNOWLEDGE_REPLICATE: 'https://bot:hunter2-secret@host/all.git' }))
      .to.throw(ConfigError)
      .that.satisfies((e: Error) => !e.message.includes('hunter2-secret') && e.message.includes('https://***@host/all.git'));
    expect(() => loadConfig({ KNOWLEDGE_REPLICATE_TIMEOUT_MS: '5s' })).to.throw(ConfigError, /KNOWLEDGE_REPLICATE_TIMEOUT_MS must be an integer/);
    expect(() => loadConfig({ KNOWLEDGE_REPLICATE_CONCURRENCY: '0' })).to.throw(ConfigError, /KNOWLEDGE_REPLICATE_CONCURRENCY must be an integer from 1 to 64/);
    expect(() => loadConfig({ KNOWLEDGE_REPLICATE_RETRY_BASE_MS: '5000', KNOWLEDGE_REPLICATE_RETRY_MAX_MS: '1000' })).to.throw(ConfigError, /must not be below/);
  });

  it('stops `serve` at start with the message, before the data directory is touched', async function () {
    // A build (ensureBuilt) on a busy machine takes a while.
    this.timeout(90_000);
    await ensureBuilt();
    const tmp = await tmpDir('ks-repl-config');
    try {
      const { out, exited } = spawnCli(['serve', '--port', '0', '--host', '127.0.0.1', '--data-dir', `${tmp.dir}/data`], { KNOWLEDGE_REPLICATE: 'rsync://backup/{org}' });
      const { code } = await exited;
      expect(code).to.not.equal(0);
      expect(out.stderr).to.include('KNOWLEDGE_REPLICATE: "rsync://backup/{org}" is not a git remote URL (the scheme rsync is not one of git, http, https, ssh, file)');
      expect(out.stdout).to.not.include('Admin API key');
      expect(existsSync(`${tmp.dir}/data`)).to.equal(false);
    } finally {
      await tmp.cleanup();
    }
  });
});
