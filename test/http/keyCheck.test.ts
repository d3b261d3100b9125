import { expect } from 'chai';
import { KEY_CHECK_MS, KeyCheck } from '../../src/http/events/keyCheck.js';

describe("KeyCheck: a key's validity, asked at most once a second", () => {
  it('is known valid only while the last answer, under a second old, said valid', async () => {
    const answers: Array<(valid: boolean) => void> = [];
    let now = 0;
    const check = new KeyCheck(
      () => new Promise<boolean>((resolve) => answers.push(resolve)),
      () => now,
    );
    // Checked when the stream opened: valid, without asking.
    expect(check.knownValid()).to.equal(true);
    expect(await check.valid()).to.equal(true);
    expect(answers).to.have.length(0);
    // A second later the next valid() asks; until the answer comes, nothing is known.
    now += KEY_CHECK_MS;
    expect(check.knownValid()).to.equal(false);
    const asked = check.valid();
    expect(answers).to.have.length(1);
    expect(check.knownValid()).to.equal(false);
    answers[0]?.(false);
    expect(await asked).to.equal(false);
    // Revoked: never known valid, and valid() keeps answering false within the second.
    expect(check.knownValid()).to.equal(false);
    expect(await check.valid()).to.equal(false);
  });
});
