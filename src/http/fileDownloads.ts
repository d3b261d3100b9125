import type { ServerResponse } from 'node:http';
import { Slots } from '../common/slots.js';

/** The settings of GET /files downloads (from the server's Config). */
export interface FileDownloadSettings {
  /**
   * Bytes of file content all downloads together may hold in memory (a file is read whole from git, then
   * sent). Past it, downloads wait their turn before reading; a file larger than the whole budget is sent alone.
   */
  memoryBytes: number;
  /** A download whose client takes nothing for this long is cut off, so a reader that stops cannot hold its bytes for ever. */
  stallMs: number;
}

export const FILE_DOWNLOAD_DEFAULTS: FileDownloadSettings = {
  memoryBytes: 256 * 1024 * 1024,
  stallMs: 60_000,
};

/**
 * Room in memory for the files being sent: a download takes as many bytes of the budget as its file has,
 * before it reads them, and gives them back once its answer is sent or its client is gone. Without it, a
 * hundred clients downloading 25 MiB files at once (or never reading what they asked for) would hold
 * 2.5 GB of the server's memory.
 */
export class DownloadBudget {
  private readonly bytes: Slots;

  constructor(private readonly settings: FileDownloadSettings) {
    this.bytes = new Slots(settings.memoryBytes);
  }

  /** Bytes held by downloads being sent now (for tests and metrics). */
  get held(): number {
    return this.bytes.held;
  }

  /** Downloads waiting for room. */
  get queued(): number {
    return this.bytes.queued;
  }

  /**
   * Waits for room for `size` bytes, then reads them with `read`; the room is held until `res` closes
   * (sent, or the client gone; a client that stops reading is cut off after `stallMs` without progress).
   * Null when the client left while the download waited: nothing is read for it.
   */
  async read(res: ServerResponse, size: number, read: () => Promise<Buffer>): Promise<Buffer | null> {
    const release = await this.bytes.acquire(size);
    if (res.destroyed) {
      release();
      return null;
    }
    res.once('close', release);
    // Inactivity on the socket: no byte taken for stallMs. Node resets the socket's timeout for the next request.
    res.setTimeout(this.settings.stallMs, () => res.destroy());
    try {
      return await read();
    } catch (err) {
      res.off('close', release);
      release();
      throw err;
    }
  }
}
