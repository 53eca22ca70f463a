/** A configuration variable refused at start-up; the message names the variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}
