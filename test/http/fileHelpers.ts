import type { ApiResponse, TestServer } from '../support/server.js';

export const FILES = '/api/v1/knowledge/files';

/** PUT a file's raw bytes with their Content-Type (and any other headers). */
export async function upload(server: TestServer, key: string, path: string, bytes: Buffer, type: string, headers: Record<string, string> = {}): Promise<ApiResponse> {
  const res = await fetch(`${server.url}${FILES}/${path}`, { method: 'PUT', headers: { Authorization: `Bearer ${key}`, 'Content-Type': type, ...headers }, body: bytes });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as ApiResponse['body']) : undefined };
}
