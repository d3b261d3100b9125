import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { isPrivateAddress } from '../domain/privateAddress.js';
import type { WebhookSender } from '../domain/webhookDelivery.js';

/** Resolves a host name to its addresses (dns.lookup with `all`); a seam for tests. */
export type Resolve = (host: string, callback: (err: Error | null, addresses: LookupAddress[]) => void) => void;

const systemResolve: Resolve = (host, callback) => dnsLookup(host, { all: true }, callback);

/**
 * The lookup the connection itself uses: the addresses it connects to are the ones checked, so a name that
 * answers a public address to a check and a private one to the connection (DNS rebinding) gets nowhere.
 */
export function checkedLookup(resolve: Resolve): LookupFunction {
  return (host, options, callback) => {
    resolve(host, (err, addresses) => {
      const refused = err ? null : addresses.find((a) => isPrivateAddress(a.address));
      const failure = err ?? (refused ? privateAnswer(host) : addresses.length === 0 ? new Error(`${host} has no address`) : null);
      if (failure) return (callback as (e: Error) => void)(failure);
      const wanted = options.family === 4 || options.family === 6 ? addresses.filter((a) => a.family === options.family) : addresses;
      if (options.all) return (callback as (e: null, all: LookupAddress[]) => void)(null, wanted);
      const first = wanted[0] ?? (addresses[0] as LookupAddress);
      (callback as (e: null, address: string, family: number) => void)(null, first.address, first.family);
    });
  };
}

function privateAnswer(host: string): Error {
  return new Error(`${host} resolves to a private address (KNOWLEDGE_WEBHOOK_ALLOW_PRIVATE is off)`);
}

/**
 * Sends webhook deliveries with node:http(s). Redirects are not followed (a 3xx is a failed attempt: a
 * receiver that moved is re-registered by an admin, and a redirect cannot lead a delivery somewhere the
 * address check would refuse). Unless private addresses are allowed, an address literal is checked as it
 * is and a name through the connection's own lookup (see checkedLookup). Only the status is read.
 */
export function webhookSender(options: { allowPrivate: boolean; resolve?: Resolve }): WebhookSender {
  const lookup = options.allowPrivate ? undefined : checkedLookup(options.resolve ?? systemResolve);
  return ({ url, headers, body, timeoutMs }) =>
    new Promise((resolve, reject) => {
      const target = new URL(url);
      const host = target.hostname.replace(/^\[|\]$/g, '');
      // An address literal is connected to without any lookup: it is checked here instead.
      if (lookup && isIP(host) !== 0 && isPrivateAddress(host)) return reject(privateAnswer(host));
      const send = target.protocol === 'https:' ? httpsRequest : httpRequest;
      const req = send(target, { method: 'POST', headers: { ...headers, 'Content-Length': Buffer.byteLength(body) }, lookup }, (res: IncomingMessage) => {
        clearTimeout(deadline);
        // The body is not read: only the status counts. Dropping it frees the socket.
        res.resume();
        resolve({ status: res.statusCode ?? 0 });
      });
      // The whole attempt, from lookup to status line: a receiver that trickles bytes is cut as one that hangs.
      const deadline = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      req.once('error', (err: Error & { code?: string }) => {
        clearTimeout(deadline);
        const ours = err.message.startsWith('no answer') || err.message.includes('private address');
        reject(new Error(ours ? err.message : (err.code ?? err.message), { cause: err }));
      });
      req.end(body);
    });
}
