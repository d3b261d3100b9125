/**
 * One version of an item, as `GET /history/{path}` lists it. In a module of its own, importing
 * nothing, so the dashboard's browser code reads the same shape the server writes.
 */
export interface VersionView {
  version: number;
  commitId: string;
  action: string;
  message: string;
  author: { name: string; keyId: string };
  timestamp: string;
}
