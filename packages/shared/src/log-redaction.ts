/**
 * Connection URLs' secrets (DATABASE_URL, REDIS_URL) kept out of every log line, whoever writes it:
 * {@link secretRedactingHooks} replaces them in pino's serialized text. The last defence, for a
 * driver's error or a dependency's line carrying a connection string.
 */

/** What replaces a secret in a log line. */
export const redactedMark = 'redacted';

/** Query parameters of a connection URL whose values are secrets (`password`, `sslpassword`…). */
const secretParameter = /pass|secret|token|key/i;

/** Shortest secret replaced (characters): a shorter one would garble every line containing those letters. */
const shortestRedacted = 4;

/**
 * The secrets `urls` carry (user-info passwords, secret-named query values; none for a non-URL).
 * @returns each as written and decoded, at least {@link shortestRedacted} characters long
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

/** pino's `hooks` replacing each secret with {@link redactedMark} in every line, JSON-escaped forms too. */
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
