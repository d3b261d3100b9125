import { InvalidInput, UnsupportedFileType } from './errors.js';

/** How a file's text is got out of it (see src/extract/). */
export type FileKind = 'pdf' | 'docx' | 'html' | 'text';

export interface FileType {
  mime: string;
  kind: FileKind;
  /** The extensions a path holding this type may end with (contract §8: "the path's extension must fit the type"). */
  extensions: readonly string[];
}

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/**
 * The types the store takes, as data: adding one is a row here and, for a new kind, an extractor.
 * Any other `text/*` is taken as text too, under any extension no row below claims.
 */
export const FILE_TYPES: readonly FileType[] = [
  { mime: 'application/pdf', kind: 'pdf', extensions: ['pdf'] },
  { mime: DOCX, kind: 'docx', extensions: ['docx'] },
  { mime: 'text/html', kind: 'html', extensions: ['html', 'htm'] },
  { mime: 'application/xhtml+xml', kind: 'html', extensions: ['xhtml', 'html', 'htm'] },
  { mime: 'text/markdown', kind: 'text', extensions: ['md', 'markdown'] },
  { mime: 'text/csv', kind: 'text', extensions: ['csv'] },
  { mime: 'application/json', kind: 'text', extensions: ['json'] },
  { mime: 'text/plain', kind: 'text', extensions: ['txt', 'text', 'log', 'md'] },
];

/** Extensions that promise a type of their own: another type may not wear them. */
const CLAIMED = new Set(FILE_TYPES.filter((t) => t.kind !== 'text').flatMap((t) => t.extensions));

/** Types `file-type` names for bytes a text file may well start with (an XHTML page's `<?xml`). */
const TEXT_LOOKALIKES = new Set(['application/xml', 'text/xml']);

/** `Text/HTML; charset=utf-8` → `text/html`. */
export function normalizeMime(header: string): string {
  return (header.split(';')[0] ?? '').trim().toLowerCase();
}

function typeOf(mime: string): FileType | undefined {
  const row = FILE_TYPES.find((t) => t.mime === mime);
  if (row) return row;
  if (/^text\/[a-z0-9][a-z0-9!#$&^_.+-]*$/.test(mime)) return { mime, kind: 'text', extensions: [] };
  return undefined;
}

/**
 * The type an upload is stored as: the declared one (the Content-Type, or the multipart part's),
 * held to what the bytes are (`detected`, from their magic numbers; undefined for text, which
 * has none) and to the path's extension. A binary type needs bytes of that type; a text type
 * needs bytes no detector takes for a binary format.
 */
export function resolveFileType(args: { declared: string; detected: string | undefined; path: string }): FileType {
  const declared = normalizeMime(args.declared);
  const { detected } = args;
  const given = declared === '' || declared === 'application/octet-stream' ? (detected ?? (declared || 'unknown')) : declared;
  const type = typeOf(given);
  if (!type) throw new UnsupportedFileType({ type: given });
  if (type.kind === 'pdf' || type.kind === 'docx') {
    if (detected !== type.mime) throw new UnsupportedFileType({ type: detected ? `${detected} (sent as ${type.mime})` : `${type.mime} (the bytes are not one)` });
  } else if (detected !== undefined && !TEXT_LOOKALIKES.has(detected)) {
    throw new UnsupportedFileType({ type: `${detected} (sent as ${type.mime})` });
  }
  const extension = /\.([a-z0-9]+)$/.exec(args.path)?.[1] ?? '';
  const fits = type.extensions.length > 0 ? type.extensions.includes(extension) : !CLAIMED.has(extension);
  if (!fits) {
    const hint = type.extensions.length > 0 ? `: use .${type.extensions.join(', .')}` : '';
    throw new InvalidInput({ reason: `The path's extension .${extension} does not fit ${type.mime}${hint}` });
  }
  return type;
}

export const MAX_FILE_NAME_LENGTH = 255;

/** The original name, shown and offered on download: one name, no folders, nothing that breaks a header line. */
export function validateFileName(name: string): string {
  if (name.length < 1 || name.length > MAX_FILE_NAME_LENGTH) throw new InvalidInput({ reason: `File name must be 1 to ${MAX_FILE_NAME_LENGTH} characters` });
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f/\\]/.test(name) || !name.isWellFormed() || name.trim() !== name || name === '.' || name === '..') {
    throw new InvalidInput({ reason: 'File name must not contain "/", "\\", control characters, or leading/trailing spaces' });
  }
  return name;
}
