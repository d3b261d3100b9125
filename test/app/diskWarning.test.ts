import { expect } from 'chai';
import { createLogger } from '../../src/common/log.js';
import type { JournalCheck } from '../../src/storage/fs/ext4Journal.js';
import { api, startTestServer } from '../support/server.js';

/** The start's warning of a data directory on ext4 without a journal (README, "The file system under the data directory"). */

describe('serve: a data directory on ext4 without a journal is named in the log at start', () => {
  async function warningsAtStart(noJournal: JournalCheck): Promise<Array<Record<string, unknown>>> {
    const lines: Array<Record<string, unknown>> = [];
    const dirs: string[] = [];
    const server = await startTestServer({
      logger: createLogger({ level: 'info', write: (line) => void lines.push(JSON.parse(line) as Record<string, unknown>) }),
      noJournal: async (dir) => {
        dirs.push(dir);
        return noJournal(dir);
      },
    });
    try {
      expect(dirs).to.deep.equal([server.dataDir]);
      expect((await api(`${server.url}/api/v1/knowledge`, { key: server.adminKey })).status).to.equal(200);
    } finally {
      await server.close();
    }
    return lines.filter((l) => l.level === 'warn' && String(l.msg).includes('without a journal'));
  }

  it('warns once, with the device and the fix, and serves all the same', async () => {
    const warnings = await warningsAtStart(async () => ({ device: 'vda' }));
    expect(warnings).to.have.length(1);
    expect(warnings[0]).to.include({ device: 'vda' });
    expect(String(warnings[0]?.msg)).to.match(/^the data directory is on ext4 without a journal: /);
    expect(String(warnings[0]?.fix)).to.include('a file system with a journal');
  });

  it('says nothing of a disk with a journal', async () => {
    const warnings = await warningsAtStart(async () => undefined);
    expect(warnings).to.deep.equal([]);
  });
});
