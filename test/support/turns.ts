/**
 * How many times the event loop reached its check phase while `work` ran: a chain of setImmediate callbacks
 * counts them. Work done in one piece lets it count only the waits for I/O between its awaits; work sliced
 * with a turn between slices (common/turn.ts) adds one per slice.
 */
export async function turnsDuring<T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> {
  let turns = 0;
  let counting = true;
  const tick = (): void => {
    if (!counting) return;
    turns++;
    setImmediate(tick);
  };
  setImmediate(tick);
  try {
    return { result: await work(), turns };
  } finally {
    counting = false;
  }
}
