/** Time as `paced` needs it: passed in, so that a test drives it instead of waiting. */
export interface PaceTimers {
  /** Milliseconds on a clock that never goes back. */
  now(): number;
  /** Calls `fn` once, `ms` from now; it must not keep the process alive by itself. */
  later(ms: number, fn: () => void): void;
}

export const realTimers: PaceTimers = {
  now: () => performance.now(),
  later: (ms, fn) => void setTimeout(fn, ms).unref(),
};

/**
 * A call of `fn` per request, at most one per `gapMs()`: at once when the last call is at least that old, else
 * once when it is, for every request made meanwhile. Nothing is delayed when requests are rare; under a steady
 * stream of them, `fn` runs once per gap whatever their number. The gap is asked at each request, so it may
 * follow what `fn` costs now (the event fan-out's: its streams).
 */
export function paced(fn: () => void, gapMs: () => number, timers: PaceTimers = realTimers): () => void {
  let last = -Infinity;
  let pending = false;
  const fire = (): void => {
    pending = false;
    last = timers.now();
    fn();
  };
  return () => {
    if (pending) return;
    const wait = last + gapMs() - timers.now();
    if (wait <= 0) return fire();
    pending = true;
    timers.later(wait, fire);
  };
}
