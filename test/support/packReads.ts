import type { FileHandleLike, FsPromises } from '../../src/storage/fs/fs.js';

/**
 * What the pack reader reads of each pack, seen through a view of `fs`: how often each `.pack` was
 * opened and the objects read from it (reads other than the 20-byte trailer checked at open),
 * with their bytes. The pack reader reads objects at their offsets, never a whole pack.
 */
export class PackReads {
  readonly opens = new Map<string, number>();
  readonly objectReads = new Map<string, { reads: number; bytes: number }>();

  view(fs: FsPromises): FsPromises {
    const view = Object.create(fs) as FsPromises;
    view.open = async (path: string, flags: string, mode?: number): Promise<FileHandleLike> => {
      const handle = await fs.open(path, flags, mode);
      if (!path.endsWith('.pack')) return handle;
      this.opens.set(path, (this.opens.get(path) ?? 0) + 1);
      const { size } = await handle.stat();
      const counted: FileHandleLike = {
        write: (data) => handle.write(data),
        chmod: (m) => handle.chmod(m),
        sync: () => handle.sync(),
        close: () => handle.close(),
        stat: () => handle.stat(),
        read: async (buffer, offset, length, position) => {
          if (position !== size - 20 || length !== 20) {
            const seen = this.objectReads.get(path) ?? { reads: 0, bytes: 0 };
            this.objectReads.set(path, { reads: seen.reads + 1, bytes: seen.bytes + length });
          }
          return handle.read(buffer, offset, length, position);
        },
      };
      return counted;
    };
    return view;
  }

  /** How many packs objects were read from. */
  get packsRead(): number {
    return this.objectReads.size;
  }

  clear(): void {
    this.opens.clear();
    this.objectReads.clear();
  }
}
