/** What names an account (the JWT `sub`, a publisher's `accountId`): one rule for both doors. */
import { unstorableTextReason } from './storable-json.js';

/** Longest account id, in characters: the width of the `account_id` columns. */
export const maxAccountIdLength = 255;

const controlCharacter = /\p{Cc}/u;

/**
 * Whether `value` can name an account: non-blank, at most {@link maxAccountIdLength} characters, no
 * control characters (U+0000–U+001F, U+007F–U+009F) or lone surrogates.
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
