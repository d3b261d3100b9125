/**
 * Resolves at the event loop's next check phase, once what was waiting has run (I/O, timers, requests).
 * Long work over many items awaits it between slices, so that one organization's load or catch-up does
 * not hold every other request for its whole length.
 */
export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Items worked through between two turns in such a slice: ~15-20 ms at 3-4 µs an item. */
export const ITEMS_PER_TURN = 5_000;
