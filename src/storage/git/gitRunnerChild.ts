import { execGit, type RunningGit } from './gitExec.js';
import { failedRun, type FromRunner, type ToRunner } from './gitRunnerMessages.js';

/**
 * The git runner process (see gitRunner.ts): it starts each git the server asks for and sends back how it
 * ended. Its own memory is small, so starting a git here costs little, where a spawn from the server forks the
 * whole server.
 */
const running = new Map<number, RunningGit>();

process.on('message', (msg: ToRunner) => {
  if (msg.type === 'kill') {
    running.get(msg.id)?.kill();
    return;
  }
  const { id } = msg;
  let git: RunningGit;
  try {
    git = execGit(msg);
  } catch (err) {
    // spawn refuses some arguments at once (a NUL in one): that run fails, the runner goes on.
    tell(failedRun(id, String(err)));
    return;
  }
  running.set(id, git);
  void git.done.then((outcome) => {
    running.delete(id);
    tell({ type: 'result', id, ...outcome });
  });
});

// The server is gone (stopped, or killed): so are the gits it asked for; nothing is left running.
process.on('disconnect', () => {
  for (const git of running.values()) git.kill();
  process.exit(0);
});

tell({ type: 'ready' });

/** A message to the server, unless it is gone (then 'disconnect' ends this process). */
function tell(msg: FromRunner): void {
  if (process.connected) process.send?.(msg, undefined, undefined, () => undefined);
}
