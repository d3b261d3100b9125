import type { EventChunk } from './eventChunks.js';
import type { StreamWaiter } from './sseStream.js';

/**
 * Wakes streams after a commit. Those parked alike (the same shared turn: view and commit, see TurnCache)
 * are handed that turn together, once it is there, in one plain loop of socket writes: no stream's own loop
 * runs, so a wake-up of 200 streams costs 200 writes and one callback, not 200 loops' worth of promises,
 * closures and turns of the event loop (the fan-out process's JavaScript, and its garbage). A stream that
 * cannot take it so (not parked, bytes still queued, its key due for a check, a turn with more to walk) is
 * woken and walks on its own, as every stream did before.
 */
export function wakeParked(waiters: Iterable<StreamWaiter>): void {
  const alike = new Map<Promise<EventChunk | null>, Array<{ waiter: StreamWaiter; at: string | null }>>();
  for (const waiter of waiters) {
    const parked = waiter.parked();
    if (!parked) {
      waiter.wake();
      continue;
    }
    const group = alike.get(parked.turn);
    if (group) group.push({ waiter, at: parked.at });
    else alike.set(parked.turn, [{ waiter, at: parked.at }]);
  }
  for (const [turn, group] of alike) {
    turn.then(
      (chunk) => {
        for (const { waiter, at } of group) if (!chunk || !waiter.take(chunk, at)) waiter.wake();
      },
      // The loops ask again, and end their streams as they would on a failed turn.
      () => {
        for (const { waiter } of group) waiter.wake();
      },
    );
  }
}
