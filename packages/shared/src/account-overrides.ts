/**
 * ACCOUNT_OVERRIDES: account id → the settings it gets instead of the sharing defaults, read by both
 * services at start, e.g. `{"acct-big": {"weight": 4, "deliveries_per_second": 20000, "max_subscriptions": 1000}}`.
 */
import Type, { type Static } from 'typebox';
import Value from 'typebox/value';
import { ConfigError } from '@webhooks/publisher';
import { isValidAccountId } from '@webhooks/publisher';

/** What one account may override. */
export const accountOverrideSchema = Type.Object(
  {
    /** Share of delivery capacity under contention, against weight 1 of every other account. */
    weight: Type.Optional(Type.Number({ minimum: 0.01, maximum: 1000 })),
    /** Deliveries admitted a second at most (ACCOUNT_DELIVERIES_PER_SECOND otherwise). */
    deliveries_per_second: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    /** Subscriptions the account may have (MAX_SUBSCRIPTIONS_PER_ACCOUNT otherwise). */
    max_subscriptions: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
    /** Bytes of event `data` the API accepts a UTC day (ACCOUNT_PAYLOAD_BYTES_PER_DAY otherwise). */
    payload_bytes_per_day: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);

/** One account's overrides. */
export type AccountOverride = Static<typeof accountOverrideSchema>;

const overridesSchema = Type.Record(Type.String(), accountOverrideSchema);

/**
 * Parses ACCOUNT_OVERRIDES (`value`; empty: none) into account id → overrides.
 * @throws ConfigError naming the variable, and the account and field at fault
 */
export function parseAccountOverrides(value: string): Map<string, AccountOverride> {
  if (value.trim() === '') return new Map();
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch (error) {
    throw new ConfigError(
      `Invalid environment variable ACCOUNT_OVERRIDES: not JSON (${(error as Error).message})`,
    );
  }
  const [error] = Value.Errors(overridesSchema, parsed);
  if (error !== undefined)
    throw new ConfigError(
      `Invalid environment variable ACCOUNT_OVERRIDES at ${error.instancePath || '/'}: ${error.message}`,
    );
  const overrides = new Map(Object.entries(parsed as Record<string, AccountOverride>));
  const badAccount = [...overrides.keys()].find((account) => !isValidAccountId(account));
  if (badAccount !== undefined)
    throw new ConfigError(
      `Invalid environment variable ACCOUNT_OVERRIDES: ${JSON.stringify(badAccount)} is not an account id`,
    );
  return overrides;
}
