import { promises as fsp } from 'node:fs';
import { basename, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { FILE_TYPES } from '../domain/fileTypes.js';
import type { KnowledgeItem } from '../http/presenters.js';
import type { FsPromises } from '../storage/fs/fs.js';
import { writeStreamDurable } from '../storage/fs/durable.js';
import { itemUrlPath } from './apiClient.js';
import { CliError, UsageError } from './errors.js';
import { client, readStdinBytes, withTarget, type Target } from './itemTarget.js';
import { print } from './output.js';
import { versionNumber } from './versionCommands.js';

/**
 * `knowledge-store item upload|download`: file items (README, File items) through `PUT` and `GET /files/{path}`.
 * An upload sends the bytes as they are, with a type the server can hold to the path's extension; the server
 * extracts the text and makes it searchable. A download writes the original bytes back, byte for byte.
 */
export function addFileCommands(item: Command): void {
  withTarget(item.command('upload <path>').description('create or update a file item (PDF, DOCX, HTML, text) from --file or stdin: the server extracts its text'))
    .option('--file <file>', 'the file to send (default: stdin)')
    .option('--type <mime>', "its MIME type (default: from the path's extension, then the file's; PDF and DOCX are also known by their bytes)")
    .option('--name <name>', 'the original file name, offered on download (default: the name of --file, else the last segment of the path)')
    .option('--if-match <etag>', 'only if the item still has this ETag (as `item get --json` shows it)')
    .action(async (path: string, opts: Target & { file?: string; type?: string; name?: string; ifMatch?: string }) => {
      const api = client(opts);
      const target = `/files/${itemUrlPath(path)}`;
      const fromStdin = !opts.file || opts.file === '-';
      // A file is streamed, never read whole into memory: a server's limit (25 MiB by default) refuses a larger one
      // by its Content-Length at once. stdin, of unknown length, is read first.
      const body = fromStdin ? { data: await readStdinBytes('the file') } : await fileBody(opts.file as string);
      const type = opts.type ?? typeByExtension(path) ?? (fromStdin ? undefined : typeByExtension(opts.file as string)) ?? 'application/octet-stream';
      const name = opts.name ?? (fromStdin ? undefined : basename(opts.file as string));
      const headers: Record<string, string> = {};
      // Header values travel as bytes read as Latin-1: the name's UTF-8 bytes, which the server reads back as UTF-8.
      if (name !== undefined) headers['X-File-Name'] = Buffer.from(name, 'utf8').toString('latin1');
      if (opts.ifMatch) headers['If-Match'] = opts.ifMatch;
      const { data: answer, etag } = await api.call<{ item: KnowledgeItem }>({ method: 'PUT', path: target, bytes: { ...body, type }, headers });
      const sent = 'data' in body ? body.data.length : body.length;
      const { content, ...rest } = answer.item;
      const text = content?.length ?? 0;
      print(
        opts,
        `Uploaded ${answer.item.path} (${answer.item.contentType ?? type}, ${answer.item.fileSize ?? sent} bytes; ${text} characters of text extracted; ETag ${etag ?? 'none'})`,
        { ...rest, extractedCharacters: text, etag },
      );
    });

  withTarget(
    item
      .command('download')
      .description("write a file item's original bytes to --output (a file, or a folder: the stored name) or to stdout")
      .argument('<path>')
      // An argument, as `item rollback` takes it: `--version` is the program's own option.
      .argument('[version]', 'an earlier version (as `item history` numbers them); default the current one', versionNumber),
  )
    .option('-o, --output <file>', 'where to write them; an existing folder takes the file under its stored name; - is stdout')
    .action(async (path: string, version: number | undefined, opts: Target & { output?: string }) => {
      const toStdout = opts.output === undefined || opts.output === '-';
      if (toStdout && opts.json) throw new UsageError("--json needs --output <file>: stdout holds the file's bytes");
      if (toStdout && process.stdout.isTTY) throw new UsageError("the file's bytes would go to the terminal: give --output <file> or redirect stdout");
      const res = await client(opts).download({ path: `/files/${itemUrlPath(path)}`, query: { version: version?.toString() } });
      // The bytes are streamed as they come, to stdout or a file, never held whole (a file item may be up to 1 GiB).
      const body = received(res);
      if (toStdout) {
        await pipeline(Readable.from(body), process.stdout);
        return;
      }
      const storedName = dispositionName(res.headers.get('content-disposition'));
      const isFolder = (await fsp.stat(opts.output as string).catch(() => null))?.isDirectory() ?? false;
      const target = isFolder ? join(opts.output as string, storedName ?? basename(path)) : (opts.output as string);
      // A temp file renamed into place: an interrupted download never leaves half a file under the name.
      const bytes = await writeStreamDurable(fsp as unknown as FsPromises, target, body);
      print(opts, `Wrote ${target} (${bytes} bytes, ${res.headers.get('content-type') ?? 'no type'})`, {
        path,
        output: target,
        bytes,
        contentType: res.headers.get('content-type'),
        fileName: storedName,
        etag: res.headers.get('etag'),
      });
    });
}

/**
 * A local file as the body of its upload: a stream of its bytes with their number (an empty file as no bytes). A
 * folder or a missing file fails here, before any request.
 */
async function fileBody(file: string): Promise<{ stream: ReadableStream<Uint8Array>; length: number } | { data: Uint8Array }> {
  const handle = await fsp.open(file, 'r');
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new UsageError(`${file} is not a file`);
    if (info.size === 0) {
      await handle.close();
      return { data: new Uint8Array(0) };
    }
    // The handle's own stream, to the size counted: the bytes sent are those the Content-Length promises, even if
    // the file grows meanwhile. It closes the handle when read, or when the server refuses early and cancels it.
    const stream = Readable.toWeb(handle.createReadStream({ start: 0, end: info.size - 1 })) as ReadableStream<Uint8Array>;
    return { stream, length: info.size };
  } catch (err) {
    await handle.close();
    throw err;
  }
}

/**
 * An answer's body as it comes. A connection lost midway is said as such, with how much came (fetch's own
 * error is "terminated"); a failure to write it (a full disk) stays the write's own error.
 */
async function* received(res: Response): AsyncGenerator<Uint8Array> {
  if (!res.body) return;
  let bytes = 0;
  const reader = res.body.getReader();
  for (;;) {
    let next: Awaited<ReturnType<typeof reader.read>>;
    try {
      next = await reader.read();
    } catch (err) {
      const cause = (err as Error & { cause?: unknown }).cause;
      const why = cause instanceof Error ? cause.message : (err as Error).message;
      const origin = new URL(res.url).origin;
      throw new CliError('CONNECTION_FAILED', `the download from ${origin} was cut off after ${bytes} bytes (${why})`, { url: origin });
    }
    if (next.done) return;
    bytes += next.value.length;
    yield next.value;
  }
}

/** The first type whose extensions hold the name's (`.md` is markdown before plain text): the table the server checks. */
function typeByExtension(name: string): string | undefined {
  const extension = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase();
  return extension === undefined ? undefined : FILE_TYPES.find((t) => t.extensions.includes(extension))?.mime;
}

/**
 * The stored name from `Content-Disposition` (its exact UTF-8 form, `filename*`), reduced to one harmless segment:
 * the server allows no folders in it, and the CLI does not trust that with where it writes.
 */
function dispositionName(header: string | null): string | undefined {
  const encoded = /filename\*=UTF-8''([^;]+)/i.exec(header ?? '')?.[1];
  if (encoded === undefined) return undefined;
  let name: string;
  try {
    name = basename(decodeURIComponent(encoded));
  } catch {
    return undefined;
  }
  return name === '' || name === '.' || name === '..' ? undefined : name;
}
