/**
 * What names an account: the JWT `sub` on the API side, `accountId` for internal publishers. One
 * rule for both doors, so an account id that one accepts the other accepts too.
 */
import { unstorableTextReason } from './storable-json.js';

/** Longest account id, in characters: the width of the `account_id` columns. */
export const maxAccountIdLength = 255;

const controlCharacter = /\p{Cc}/u;

/**
 * Whether `value` can name an account: a string, non-blank, at most {@link maxAccountIdLength}
 * characters, without control characters (U+0000 to U+001F, U+007F to U+009F) or lone surrogates.
 */
export function isValidAccountId(value: unknown): value is string {
  return (
    typeof value === 'string' &&
    value.trim().length > 0 &&
    value.length <= maxAccountIdLength &&
    !controlCharacter.test(value) &&
    unstorableTextReason(value) === null
  );
}
