import { strToU8, zipSync, type Zippable } from 'fflate';
import { PDFDocument, StandardFonts } from 'pdf-lib';

/** Small real files for the file item tests, made here rather than kept as opaque blobs. */

export const DOCX_TYPE = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** A PDF with one line of text per page (`pages` pages, each saying `text` and its number). */
export async function makePdf(text: string, pages = 1): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (let i = 1; i <= pages; i++) {
    const page = doc.addPage([300, 200]);
    page.drawText(pages === 1 ? text : `${text} ${i}`, { x: 20, y: 100, size: 12, font });
  }
  return Buffer.from(await doc.save({ useObjectStreams: false }));
}

/** A PDF encrypted with the standard handler (RC4, an empty user password): pdf.js needs a password. */
export async function makeEncryptedPdf(): Promise<Buffer> {
  const plain = (await makePdf('secret text')).toString('latin1');
  // A trailer naming an /Encrypt dictionary is what makes a reader ask for a password.
  const encrypt = '99 0 obj\n<< /Filter /Standard /V 1 /R 2 /O <' + '00'.repeat(32) + '> /U <' + '00'.repeat(32) + '> /P -4 >>\nendobj\n';
  const at = plain.lastIndexOf('\nxref') + 1;
  const withObj = plain.slice(0, at) + encrypt + plain.slice(at);
  return Buffer.from(withObj.replace(/trailer\s*<</, `trailer\n<< /Encrypt 99 0 R /ID [<${'ab'.repeat(16)}> <${'ab'.repeat(16)}>]`), 'latin1');
}

const CONTENT_TYPES = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Default Extension="png" ContentType="image/png"/>
<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>
</Types>`;

const ROOT_RELS = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>
</Relationships>`;

const W = 'http://schemas.openxmlformats.org/wordprocessingml/2006/main';

/** An image that the document links to outside itself (`TargetMode="External"`), e.g. file:///dev/zero. */
function linkedImage(relId: string): string {
  return `<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"><wp:extent cx="100" cy="100"/><wp:docPr id="1" name="x"/>
<a:graphic xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture">
<pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:nvPicPr><pic:cNvPr id="1" name="x"/><pic:cNvPicPr/></pic:nvPicPr>
<pic:blipFill><a:blip xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" r:link="${relId}"/></pic:blipFill><pic:spPr/></pic:pic>
</a:graphicData></a:graphic></wp:inline></w:drawing></w:r></w:p>`;
}

/**
 * A DOCX: a heading and paragraphs, and optionally images linked to outside targets
 * (`links`: relationship targets such as `file:///dev/zero`). `padding` adds a part of that many
 * zero bytes (a decompression bomb: it deflates to almost nothing).
 */
export function makeDocx(args: { heading: string; paragraphs: string[]; links?: string[]; padding?: number; document?: Uint8Array }): Buffer {
  const links = args.links ?? [];
  const body = [
    `<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>${args.heading}</w:t></w:r></w:p>`,
    ...args.paragraphs.map((p) => `<w:p><w:r><w:t xml:space="preserve">${p}</w:t></w:r></w:p>`),
    ...links.map((_, i) => linkedImage(`rIdImg${i}`)),
  ].join('');
  const document = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="${W}"><w:body>${body}</w:body></w:document>`;
  const rels = `<?xml version="1.0" encoding="UTF-8" standalone="yes"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${links
    .map((target, i) => `<Relationship Id="rIdImg${i}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/image" Target="${target}" TargetMode="External"/>`)
    .join('')}</Relationships>`;
  const files: Zippable = {
    '[Content_Types].xml': strToU8(CONTENT_TYPES),
    '_rels/.rels': strToU8(ROOT_RELS),
    'word/document.xml': args.document ?? strToU8(document),
    'word/_rels/document.xml.rels': strToU8(rels),
  };
  if (args.padding) files['word/media/padding.bin'] = new Uint8Array(args.padding);
  return Buffer.from(zipSync(files, { level: 9 }));
}
