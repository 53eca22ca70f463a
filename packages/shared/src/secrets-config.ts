/** SECRETS_ENCRYPTION_KEY as a {@link SecretBox}: required outside development and test, where plaintext is refused. */
import { ConfigError, isDevelopmentEnv } from './config.js';
import { createSecretBox, parseEncryptionKeys, type SecretBox } from './secret-box.js';

/**
 * The secret box of a service's configuration.
 * @throws ConfigError naming SECRETS_ENCRYPTION_KEY when it is malformed, or empty in production
 */
export function secretBoxFromEnv(config: { NODE_ENV: string; SECRETS_ENCRYPTION_KEY: string }): SecretBox {
  const keys = parseEncryptionKeys(config.SECRETS_ENCRYPTION_KEY);
  if (keys.length === 0 && !isDevelopmentEnv(config.NODE_ENV)) {
    throw new ConfigError(
      `Missing environment variable SECRETS_ENCRYPTION_KEY: required when NODE_ENV is ${JSON.stringify(config.NODE_ENV)} (only development and test may store signing secrets unencrypted)`,
    );
  }
  return createSecretBox(keys, { refusePlaintext: keys.length > 0 && !isDevelopmentEnv(config.NODE_ENV) });
}
