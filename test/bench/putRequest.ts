import { request, type Agent } from 'node:http';

/** One PUT of an item's content, answered with its status; `agent` false: a new connection for it. */
export function putItem(args: { url: string; key: string; path: string; content: string; agent?: Agent | false }): Promise<number> {
  const body = JSON.stringify({ content: args.content });
  return new Promise((resolve, reject) => {
    const req = request(`${args.url}/api/v1/knowledge/items/${args.path}`, {
      method: 'PUT',
      agent: args.agent ?? false,
      headers: { authorization: `Bearer ${args.key}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}
