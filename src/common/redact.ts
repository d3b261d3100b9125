/**
 * Hides the credentials of `url` (a git URL that may carry `user:key@`) in
 * `text`: the userinfo part of any URL, and the key itself wherever it appears
 * (git repeats it in its own messages). Keys never reach logs or terminals.
 */
export function hideCredentials(text: string, url: string): string {
  const userinfo = /:\/\/([^/@]*)@/.exec(url)?.[1];
  const secret = userinfo?.includes(':') ? userinfo.slice(userinfo.indexOf(':') + 1) : userinfo;
  const masked = text.replace(/:\/\/[^/@\s]*@/g, '://***@');
  return secret ? masked.split(secret).join('***') : masked;
}
