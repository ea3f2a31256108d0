/** Names of query parameters that carry credentials (`api_key`, `token`, `sig`, `password`...). */
const SECRET_PARAM = /key|token|secret|passw|pwd|auth|credential|sig(?:nature)?$|session|cookie/i;

/**
 * The credentials a URL carries in plain sight: the password of `user:pass@`, and query values
 * whose parameter name says key, token, secret, signature... (`?api_key=...`), each as written and
 * decoded. Error messages and logs show the URL whenever a connection fails, so these are redacted.
 */
export function urlSecrets(value: string): string[] {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return [];
  }
  const found: string[] = [];
  if (url.password !== "") found.push(url.password, safeDecode(url.password));
  for (const [name, param] of url.searchParams) {
    if (SECRET_PARAM.test(name)) found.push(param, encodeURIComponent(param));
  }
  return found;
}

/** True for a variable or parameter name that says it holds a credential. */
export function isSecretName(name: string): boolean {
  return SECRET_PARAM.test(name);
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
