import { watch } from 'node:fs';

/** Calls `onChange` with the name of each entry of `dir` that changes (null: unknown); returns a stop function. */
export type DirectoryWatch = (dir: string, onChange: (name: string | null) => void, onError: (err: unknown) => void) => () => void;

/**
 * Directory watching with the OS's notifications (inotify on Linux), for the
 * key store: it lets a request skip the stat of keys.json unless something in
 * the data directory changed. Throws where the platform cannot watch; callers
 * then fall back to checking on every use.
 */
export const watchDirectory: DirectoryWatch = (dir, onChange, onError) => {
  const watcher = watch(dir, { persistent: false }, (_event, name) => onChange(typeof name === 'string' ? name : null));
  watcher.on('error', onError);
  return () => watcher.close();
};
