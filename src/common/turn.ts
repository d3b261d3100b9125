/**
 * Resolves at a later check phase of the event loop, once what was waiting has run (I/O, timers, requests).
 * Long work over many items awaits it between slices, so that one organization's load or catch-up does
 * not hold every other request for its whole length.
 *
 * One waiter goes on per turn of the loop: works that run side by side (an organization's index snapshot and
 * history log load together) would otherwise each run a slice in the same check phase, back to back, and hold
 * the loop for the sum (~60 against ~30 ms at 50,000 items, `test/bench/orgOpen.ts`). An immediate set while
 * the check phase runs waits for the next turn, so each pass lets the next waiter go and sets one more.
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    waiting.push(resolve);
    if (waiting.length === 1) setImmediate(letOneGo);
  });
}

const waiting: (() => void)[] = [];

function letOneGo(): void {
  const next = waiting.shift();
  if (waiting.length > 0) setImmediate(letOneGo);
  next?.();
}

/** Items worked through between two turns in such a slice: ~15-20 ms at 3-4 µs an item. */
export const ITEMS_PER_TURN = 5_000;
