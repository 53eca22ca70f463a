/**
 * Secrets of the connection URLs (DATABASE_URL, REDIS_URL) kept out of every log line, whoever
 * writes it: pino serializes each line, and {@link secretRedactingHooks} replaces the secrets in
 * that text before it reaches the output. This is the last line of defence: the config line at
 * start already shows `redacted`, but a driver's error message or a line written by a dependency
 * can carry a connection string too.
 */

/** What replaces a secret in a log line. */
export const redactedMark = 'redacted';

/** Query parameters of a connection URL whose values are secrets (`password`, `sslpassword`…). */
const secretParameter = /pass|secret|token|key/i;

/**
 * Shortest secret replaced, in characters: replacing a shorter one would garble every line that
 * happens to contain those letters, which hides more than it protects.
 */
const shortestRedacted = 4;

/**
 * The secrets `urls` carry: the password of their user information, and the values of query
 * parameters named like a secret. A value that is not a URL carries none.
 *
 * @returns each secret as written and as decoded, at least {@link shortestRedacted} characters long
 */
export function connectionUrlSecrets(urls: readonly string[]): string[] {
  const secrets = new Set<string>();
  const add = (value: string) => {
    for (const form of [value, safeDecode(value)]) if (form.length >= shortestRedacted) secrets.add(form);
  };
  for (const text of urls) {
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      continue;
    }
    if (url.password !== '') add(url.password);
    for (const [name, value] of url.searchParams) if (secretParameter.test(name) && value !== '') add(value);
  }
  return [...secrets];
}

function safeDecode(value: string): string {
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

/**
 * pino's `hooks` option replacing each of `secrets` with {@link redactedMark} in every serialized
 * log line (also in its JSON-escaped form, as it appears inside a string value).
 */
export function secretRedactingHooks(secrets: readonly string[]): { streamWrite(line: string): string } {
  const forms = [...new Set(secrets.flatMap((secret) => [secret, JSON.stringify(secret).slice(1, -1)]))]
    // Longest first, so a secret containing another is replaced whole.
    .sort((a, b) => b.length - a.length);
  return {
    streamWrite(line) {
      let out = line;
      for (const form of forms) if (out.includes(form)) out = out.replaceAll(form, redactedMark);
      return out;
    },
  };
}
