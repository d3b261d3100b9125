import { createHash } from 'node:crypto';
import type { Schema } from './operation.js';

/**
 * /docs: the OpenAPI document as one HTML page made on the server. No script at all and nothing from
 * elsewhere (the server may be offline, and a CDN would see who reads the docs); a browser with
 * JavaScript off reads it the same. Any OpenAPI tool can load /api/v1/openapi.json for more (try-it-out).
 */

const STYLE = `
body{font:15px/1.5 system-ui,sans-serif;max-width:72rem;margin:0 auto;padding:1rem 1.5rem;color:#1d2433}
h1{margin-bottom:.2rem}h2{border-bottom:1px solid #d0d7e2;padding-bottom:.2rem;margin-top:2rem;text-transform:capitalize}
details{border:1px solid #d0d7e2;border-radius:6px;margin:.4rem 0;padding:.3rem .7rem}
summary{cursor:pointer}summary code{font-weight:600}
.m{display:inline-block;min-width:4.2rem;font:600 12px monospace;text-transform:uppercase;color:#fff;border-radius:3px;padding:1px 6px;margin-right:.4rem;text-align:center}
.get{background:#2f6fb3}.put{background:#9a6700}.post{background:#1a7f37}.delete{background:#b3261e}
table{border-collapse:collapse;margin:.3rem 0}td,th{border:1px solid #d0d7e2;padding:2px 8px;text-align:left;vertical-align:top}
pre{background:#f4f6fa;padding:.5rem;overflow:auto;font-size:13px;margin:.2rem 0}
.s{font-weight:600}`;

/** The page's one style element, allowed by its hash and nothing else by the page's CSP. */
const STYLE_HASH = `'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`;
export const DOCS_CSP = `default-src 'none'; style-src ${STYLE_HASH}; frame-ancestors 'none'; base-uri 'none'; form-action 'none'`;

const escapeHtml = (s: string): string =>
  s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] as string);

/** `code` spans for `backticked` words of a description (after escaping, so nothing else becomes markup). */
const prose = (s: unknown): string => escapeHtml(String(s ?? '')).replace(/`([^`]+)`/g, '<code>$1</code>');

const json = (value: unknown): string => `<pre>${escapeHtml(JSON.stringify(value, null, 2) ?? '')}</pre>`;

function parametersTable(parameters: Schema[]): string {
  if (parameters.length === 0) return '';
  const rows = parameters.map(
    (p) =>
      `<tr><td><code>${escapeHtml(String(p.name))}</code></td><td>${escapeHtml(String(p.in))}${p.required ? ', required' : ''}</td>` +
      `<td><code>${escapeHtml(JSON.stringify(p.schema))}</code> ${prose(p.description)}</td></tr>`,
  );
  return `<table><tr><th>Parameter</th><th>In</th><th>Schema</th></tr>${rows.join('')}</table>`;
}

function responsesList(responses: Record<string, Schema>): string {
  return Object.entries(responses)
    .map(([status, r]) => {
      const media = Object.entries((r.content ?? {}) as Record<string, { schema?: unknown }>);
      const bodies = media.map(([type, m]) => `<div>${escapeHtml(type)}</div>${json(m.schema)}`).join('');
      return `<details><summary><span class="s">${escapeHtml(status)}</span> ${prose(r.description)}</summary>${bodies}</details>`;
    })
    .join('');
}

function operationHtml(path: string, method: string, op: Schema): string {
  const security = (op.security as Array<Record<string, unknown>>).map((s) => Object.keys(s).join(' + ') || 'none').join(' or ');
  const body = op.requestBody as { description?: string; content: Record<string, { schema: unknown }> } | undefined;
  const bodies = Object.entries(body?.content ?? {}).map(([type, m]) => `<div>Request body (${escapeHtml(type)}):</div>${json(m.schema)}`);
  return (
    `<details id="${escapeHtml(String(op.operationId))}"><summary><span class="m ${method}">${method}</span><code>${escapeHtml(path)}</code> — ${prose(op.summary)}</summary>` +
    (op.description ? `<p>${prose(op.description)}</p>` : '') +
    `<p>Auth: ${security ? escapeHtml(security) : 'none'}</p>` +
    parametersTable(op.parameters as Schema[]) +
    (body?.description ? `<p>${prose(body.description)}</p>` : '') +
    bodies.join('') +
    `<div>Responses:</div>${responsesList(op.responses as Record<string, Schema>)}</details>`
  );
}

export function docsPage(doc: Schema): string {
  const info = doc.info as { title: string; version: string; description: string };
  const paths = doc.paths as Record<string, Record<string, Schema>>;
  const byTag = new Map<string, string[]>();
  for (const [path, methods] of Object.entries(paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const tag = (op.tags as string[])[0] ?? 'other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), operationHtml(path, method, op)]);
    }
  }
  const sections = [...byTag].map(([tag, ops]) => `<h2>${escapeHtml(tag)}</h2>${ops.join('')}`).join('');
  const schemas = Object.entries((doc.components as { schemas: Record<string, unknown> }).schemas)
    .map(([name, schema]) => `<details id="schema-${escapeHtml(name)}"><summary><code>${escapeHtml(name)}</code></summary>${json(schema)}</details>`)
    .join('');
  return (
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">` +
    `<title>${escapeHtml(info.title)} API</title><style>${STYLE}</style></head><body>` +
    `<h1>${escapeHtml(info.title)} API <small>${escapeHtml(info.version)}</small></h1><p>${prose(info.description)}</p>` +
    `<p>OpenAPI ${escapeHtml(String(doc.openapi))}: <a href="/api/v1/openapi.json">/api/v1/openapi.json</a> (no key needed).</p>` +
    `${sections}<h2>Schemas</h2>${schemas}</body></html>`
  );
}
