import type { ServerConfig } from "../../config/schema.js";
import { urlSecrets } from "../../config/urlSecrets.js";
import { SecretSet } from "../../log/logger.js";

/**
 * A server's `env` and `headers` values, and the secrets in its URL: a server that prints its
 * token (on stderr, in an error) must not have it copied into status, errors or logs. Literal
 * values count too, not only `${VAR}` ones: a token written into the config is just as secret.
 */
export function serverSecrets(config: ServerConfig): SecretSet {
  const secrets = new SecretSet();
  for (const value of [...Object.values(config.env), ...Object.values(config.headers)]) {
    secrets.add(value);
    // "Bearer <token>": the token alone may show up too.
    for (const word of value.split(/\s+/)) if (word.length >= 8) secrets.add(word);
  }
  // A key in the URL's query string or userinfo shows in every "cannot connect" message.
  if (config.url !== undefined) for (const secret of urlSecrets(config.url)) secrets.add(secret);
  return secrets;
}
