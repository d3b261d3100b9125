import { expect } from 'chai';
import { paced, type PaceTimers } from '../../src/common/paced.js';
import { wakeGapMs } from '../../src/domain/events.js';

/** Time that moves only when told: the timers due by then run, in order. */
function fakeTimers(): PaceTimers & { advance(ms: number): void } {
  let now = 1_000;
  const due: Array<{ at: number; fn: () => void }> = [];
  return {
    now: () => now,
    later: (ms, fn) => void due.push({ at: now + ms, fn }),
    advance(ms) {
      const end = now + ms;
      for (;;) {
        due.sort((a, b) => a.at - b.at);
        const next = due[0];
        if (!next || next.at > end) break;
        due.shift();
        now = next.at;
        next.fn();
      }
      now = end;
    },
  };
}

describe('paced calls', () => {
  it('calls at once when the last call is a gap old, and once at the gap for every request meanwhile', () => {
    const timers = fakeTimers();
    const calls: number[] = [];
    const request = paced(() => calls.push(timers.now()), () => 100, timers);
    request();
    expect(calls).to.deep.equal([1_000]);
    timers.advance(10);
    request();
    timers.advance(20);
    request();
    request();
    expect(calls, 'nothing before the gap').to.deep.equal([1_000]);
    timers.advance(70);
    expect(calls, 'one call for three requests, at the gap').to.deep.equal([1_000, 1_100]);
    timers.advance(500);
    expect(calls, 'no request, no call').to.deep.equal([1_000, 1_100]);
    request();
    expect(calls, 'a request after a quiet spell is not delayed').to.deep.equal([1_000, 1_100, 1_600]);
  });

  it('asks the gap at each request: a steady stream of requests is called once per gap as it is then', () => {
    const timers = fakeTimers();
    const calls: number[] = [];
    let gap = 50;
    const request = paced(() => calls.push(timers.now()), () => gap, timers);
    for (let t = 0; t < 200; t += 5) {
      request();
      timers.advance(5);
    }
    expect(calls).to.deep.equal([1_000, 1_050, 1_100, 1_150, 1_200]);
    gap = 200;
    for (let t = 0; t < 600; t += 5) {
      request();
      timers.advance(5);
    }
    expect(calls.slice(5)).to.deep.equal([1_400, 1_600, 1_800]);
  });
});

describe('the event wake-up gap', () => {
  it('grows with the streams so that they write at most so many times a second, from 50 ms to 1 s', () => {
    expect(wakeGapMs(1, 1000)).to.equal(50);
    expect(wakeGapMs(50, 1000)).to.equal(50);
    expect(wakeGapMs(200, 1000)).to.equal(200);
    expect(wakeGapMs(200, 4000)).to.equal(50);
    expect(wakeGapMs(5000, 1000)).to.equal(1000);
    expect(wakeGapMs(5, 10)).to.equal(500);
  });
});
