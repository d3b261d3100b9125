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

/**
 * An API key as the store issues them, `ks_<org>_` and 43 characters of base64url (256 bits), or a
 * legacy one (`ks_` and the 43 characters): organization ids are of the same alphabet, so one run
 * covers both, the organization hidden with the secret. Shorter runs are matched too.
 */
const KEY_SHAPED = /\bks_[A-Za-z0-9_-]{16,}/g;

/** `text` with anything shaped like an API key replaced by `ks_***` (log lines never carry a key). */
export function redactSecrets(text: string): string {
  return text.replace(KEY_SHAPED, 'ks_***');
}
