/**
 * Progress of long work (`org import`, `verify`, `gc`, a search index rebuild) on stderr. On a terminal,
 * one line redrawn in place: a bar where the work has a count, a spinner with the time spent where it
 * has none (a clone, git fsck). Anywhere else (a pipe, a file, a test reading stderr), plain lines only,
 * the ones the commands always printed: no control characters in logs.
 */
export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(chunk: string): unknown;
}

export interface Progress {
  /** A phase without a count: a spinner on a terminal, else `text` as a line. */
  step(text: string): void;
  /** `done` of `total`: a bar on a terminal, else `line` (when given) as a line. */
  update(args: { label: string; done: number; total: number; line?: string }): void;
  /** A line that stays (a warning, a result): printed above the bar. */
  log(line: string): void;
  /** Clears the bar; what follows is printed as usual. */
  done(): void;
}

export const silentProgress: Progress = { step: () => undefined, update: () => undefined, log: () => undefined, done: () => undefined };

const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const CLEAR = '\r\x1b[2K';

export function createProgress(options: { stream?: ProgressStream; animate?: boolean; now?: () => number } = {}): Progress {
  const stream = options.stream ?? process.stderr;
  if (!stream.isTTY) {
    return {
      step: (text) => void stream.write(`${text}\n`),
      update: ({ line }) => void (line !== undefined && stream.write(`${line}\n`)),
      log: (line) => void stream.write(`${line}\n`),
      done: () => undefined,
    };
  }

  const now = options.now ?? Date.now;
  let status: (() => string) | null = null;
  let frame = 0;
  let timer: NodeJS.Timeout | undefined;
  const width = (): number => Math.max(20, (stream.columns ?? 80) - 1);
  const fit = (text: string): string => (text.length > width() ? `${text.slice(0, width() - 1)}…` : text);
  const draw = (): void => void (status && stream.write(`${CLEAR}${fit(status())}`));
  const animate = (): void => {
    if (timer || options.animate === false) return;
    // unref: a bar never keeps the process alive once the work is done.
    timer = setInterval(() => {
      frame++;
      draw();
    }, 100);
    timer.unref();
  };

  return {
    step(text) {
      const started = now();
      status = () => `${SPINNER[frame % SPINNER.length] ?? ''} ${text} ${Math.floor((now() - started) / 1000)}s`;
      draw();
      animate();
    },
    update({ label, done, total }) {
      status = () => {
        const pct = total > 0 ? Math.min(1, done / total) : 1;
        const tail = ` ${done}/${total} ${Math.round(pct * 100)}%`;
        const barWidth = Math.max(10, Math.min(40, width() - label.length - tail.length - 3));
        const filled = Math.round(pct * barWidth);
        return `${label} [${'█'.repeat(filled)}${'░'.repeat(barWidth - filled)}]${tail}`;
      };
      draw();
    },
    log(line) {
      stream.write(`${status ? CLEAR : ''}${line}\n`);
      draw();
    },
    done() {
      if (timer) clearInterval(timer);
      timer = undefined;
      if (status) stream.write(CLEAR);
      status = null;
    },
  };
}
