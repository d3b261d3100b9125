import { expect } from 'chai';
import { toErrorResponse } from '../../src/http/errorTable.js';
import { ItemNotFound, OperationFailed } from '../../src/domain/errors.js';
import { CorruptStore, LockTimeout, RefConflict } from '../../src/storage/errors.js';

/** The one error → status table (errors carry a code; only this table gives a status): the rows no HTTP suite reaches on a healthy disk. */
describe('http/errorTable', () => {
  const sys = (code: string): Error => Object.assign(new Error(`${code}: at /secret/data/path`), { code });

  it('a lock held past the wait, or a branch moved underneath: 503 with Retry-After (the client may simply retry)', () => {
    for (const err of [
      new LockTimeout({ lockPath: '/data/orgs/a.git/refs/heads/main.lock', waitedMs: 10_000 }),
      new RefConflict({ ref: 'refs/heads/main', expected: 'a'.repeat(40), actual: 'b'.repeat(40) }),
    ]) {
      const r = toErrorResponse(err);
      expect(r.status, err.code).to.equal(503);
      expect(r.headers).to.deep.equal({ 'Retry-After': '1' });
      expect(r.message).to.not.include('/data');
    }
  });

  it('a full disk is 507, any other system fault a 500, both logged as faults, neither showing the path', () => {
    expect(toErrorResponse(sys('ENOSPC'))).to.deep.equal({ status: 507, message: 'Insufficient storage', fault: true });
    expect(toErrorResponse(sys('EDQUOT')).status).to.equal(507);
    expect(toErrorResponse(sys('EIO'))).to.deep.equal({ status: 500, message: 'Internal server error', fault: true });
    expect(toErrorResponse(new TypeError('x is undefined'))).to.deep.equal({ status: 500, message: 'Internal server error', fault: true });
  });

  it('a refused operation of a commit answers as its cause, with its index; a fault of ours stays a fault', () => {
    const refused = toErrorResponse(new OperationFailed({ index: 3, cause: new ItemNotFound({ path: 'a.md' }) }));
    expect(refused).to.deep.equal({ status: 404, message: 'Knowledge item not found', fault: false, data: { failedOperation: 3 } });
    const broken = toErrorResponse(new OperationFailed({ index: 0, cause: new CorruptStore({ where: '/data/acme.git', reason: 'bad record' }) }));
    expect(broken).to.deep.equal({ status: 500, message: 'Internal server error', fault: true, data: { failedOperation: 0 } });
  });

  it("a body that does not decode with its Content-Encoding is the client's fault: 400", () => {
    for (const code of ['Z_DATA_ERROR', 'Z_BUF_ERROR', 'ERR_BROTLI_DECOMPRESSION_FAILED']) {
      expect(toErrorResponse(sys(code)), code).to.deep.equal({
        status: 400,
        message: 'Request body does not decode with its Content-Encoding',
        fault: false,
      });
    }
  });
});
