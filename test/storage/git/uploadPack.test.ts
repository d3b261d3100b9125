import { PassThrough } from 'node:stream';
import { expect } from 'chai';
import { GitCli } from '../../../src/storage/git/gitCli.js';
import { tmpDir } from '../../support/tmp.js';

/**
 * upload-pack reads the request body through a pipeline (gunzip, limits) that may fail before git is started:
 * a body refused then must end git at once, not leave it waiting for input until its 10-minute timeout (a clone
 * request with a bad gzip body hung so, now and then, in the leaks suite).
 */
const closed = (stream: PassThrough): Promise<void> => new Promise((resolve) => stream.once('close', () => resolve()));

describe('storage/git: upload-pack with a request body that failed', function () {
  this.timeout(20_000);

  for (const how of ['failed before git started', 'fails while git waits', 'was closed before git started']) {
    it(`ends git at once when its input ${how}`, async () => {
      const { dir, cleanup } = await tmpDir('ks-upload-pack');
      try {
        const git = new GitCli(process.env);
        const gitdir = `${dir}/r.git`;
        expect((await git.run(['init', '--bare', '-q', gitdir])).code).to.equal(0);
        const input = new PassThrough();
        input.on('error', () => undefined); // the request pipeline's own listener
        if (how === 'failed before git started') {
          input.destroy(new Error('incorrect header check'));
          await closed(input);
        } else if (how === 'was closed before git started') {
          input.destroy();
          await closed(input);
        }
        const started = Date.now();
        const pack = git.uploadPack({ gitdir, advertiseRefs: false, input, timeoutMs: 10_000 });
        pack.stdout.resume();
        if (how === 'fails while git waits') setTimeout(() => input.destroy(new Error('incorrect header check')), 200);
        const ended = await pack.done;
        expect(ended.code, ended.stderr).to.not.equal(0);
        expect(Date.now() - started, 'ms until git ended').to.be.below(5_000);
      } finally {
        await cleanup();
      }
    });
  }
});
