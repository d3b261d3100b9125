import { zipInflatedSize } from './zipSize.js';

// The libraries are loaded by the kind that needs them: a worker starts for one file, and pdf.js
// alone is megabytes of code that a text file's worker need not parse.

/** The kinds of file whose text can be had (the domain's FileKind). */
export type ExtractKind = 'pdf' | 'docx' | 'html' | 'text';

/** A file whose text cannot be had, for a reason the client is told. */
export class NoText extends Error {}

export interface ExtractLimits {
  /** A DOCX may unpack to at most this many bytes (a zip bomb is refused before it is opened). */
  maxInflatedBytes: number;
  /** A PDF of more pages is refused before any page is read. */
  maxPdfPages: number;
}

/** Runs inside the extraction worker (extractWorker.ts): never on the server's event loop. */
export async function extract(kind: ExtractKind, bytes: Uint8Array, limits: ExtractLimits): Promise<string> {
  const text = kind === 'pdf' ? await pdfText(bytes, limits) : kind === 'docx' ? await docxText(bytes, limits) : kind === 'html' ? await htmlText(utf8(bytes)) : utf8(bytes);
  // NUL is no text, and the search index and JSON consumers are better without it.
  return kind === 'text' ? text : text.replaceAll('\u0000', '');
}

function utf8(bytes: Uint8Array): string {
  try {
    const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
    if (text.includes('\u0000')) throw new NoText('the text holds NUL bytes (a binary file?)');
    return text;
  } catch (err) {
    if (err instanceof NoText) throw err;
    throw new NoText('the file is not valid UTF-8 text');
  }
}

async function pdfText(bytes: Uint8Array, limits: ExtractLimits): Promise<string> {
  const { extractText, getDocumentProxy } = await import('unpdf');
  let pdf;
  try {
    // No eval (pdf.js compiles fonts with it), no fonts nor workers of its own: text is all we want.
    pdf = await getDocumentProxy(bytes, { isEvalSupported: false, disableFontFace: true, useSystemFonts: false, stopAtErrors: true });
  } catch (err) {
    const name = err instanceof Error ? err.name : '';
    if (name === 'PasswordException') throw new NoText('the PDF is encrypted');
    if (name === 'InvalidPDFException') throw new NoText('the file is not a readable PDF');
    throw new NoText(`the PDF could not be read (${err instanceof Error ? err.message.slice(0, 200) : 'unknown error'})`);
  }
  if (pdf.numPages > limits.maxPdfPages) throw new NoText(`the PDF has ${pdf.numPages} pages; at most ${limits.maxPdfPages} are read`);
  try {
    const { text } = await extractText(pdf, { mergePages: false });
    return text.join('\n\n');
  } catch (err) {
    throw new NoText(`the PDF could not be read (${err instanceof Error ? err.message.slice(0, 200) : 'unknown error'})`);
  }
}

async function docxText(bytes: Uint8Array, limits: ExtractLimits): Promise<string> {
  const inflated = zipInflatedSize(bytes);
  if (inflated === null) throw new NoText('the file is not a readable DOCX (its zip directory is damaged)');
  if (inflated > limits.maxInflatedBytes) throw new NoText(`the DOCX unpacks to ${inflated} bytes; at most ${limits.maxInflatedBytes} are read`);
  const { default: mammoth } = await import('mammoth');
  let html: string;
  try {
    const result = await mammoth.convertToHtml(
      { buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength) },
      // Images are never read: an image may point at any file of this machine (/dev/zero, /etc/passwd).
      { convertImage: mammoth.images.imgElement(() => Promise.resolve({ src: '' })), externalFileAccess: false },
    );
    html = result.value;
  } catch (err) {
    throw new NoText(`the file is not a readable DOCX (${err instanceof Error ? err.message.slice(0, 200) : 'unknown error'})`);
  }
  return htmlText(html);
}

/** HTML → markdown (headings, lists, links and emphasis kept; scripts, styles and images dropped). */
async function htmlText(html: string): Promise<string> {
  const { default: TurndownService } = await import('turndown');
  const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced' });
  turndown.remove(['script', 'style', 'noscript', 'iframe', 'object', 'embed', 'template', 'head']);
  turndown.addRule('noImages', { filter: 'img', replacement: (_content, node) => (node as { getAttribute(name: string): string | null }).getAttribute('alt') ?? '' });
  return turndown.turndown(html).trim();
}
