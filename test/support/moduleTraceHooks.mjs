import { appendFileSync } from 'node:fs';
import process from 'node:process';

export async function load(url, context, nextLoad) {
  if (process.env.MODULE_TRACE_OUT) appendFileSync(process.env.MODULE_TRACE_OUT, `${url}\n`);
  return nextLoad(url, context);
}
