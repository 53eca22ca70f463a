/** A configuration variable refused at start-up; the message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/**
 * The one line a service prints when `error` is its configuration refused at start-up
 * (`<service>: configuration error: <message naming the variable>`), or null for any other error,
 * which the caller lets propagate with its stack. Matched by name, since an error thrown in a
 * worker thread reaches its launcher as a structured clone, not as an instance of this class.
 */
export function configErrorLine(service: string, error: unknown): string | null {
  return error instanceof Error && error.name === 'ConfigError'
    ? `${service}: configuration error: ${error.message}`
    : null;
}
