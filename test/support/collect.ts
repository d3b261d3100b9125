import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

setFlagsFromString('--expose-gc');
/** V8's full collection, callable in a process started without --expose-gc (mocha's). */
const gc = runInNewContext('gc') as () => void;

/**
 * Whether `ref`'s object has been collected, after a full collection. A WeakRef's target is kept until the
 * job that made or read it ends: the check waits for a later turn of the event loop first.
 */
export async function collected(ref: WeakRef<object>): Promise<boolean> {
  await new Promise((resolve) => setImmediate(resolve));
  gc();
  return ref.deref() === undefined;
}
