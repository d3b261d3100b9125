/**
 * A load made once and shared: every caller until it settles waits for the same promise, and once it succeeded
 * every later caller gets its result. A load that failed is forgotten, so that the next caller tries again rather
 * than being handed the same failure for the life of the process (a module that could not be read at start).
 */
export function loadOnce<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= load().catch((err: unknown) => {
      loading = undefined;
      throw err;
    });
    return loading;
  };
}
