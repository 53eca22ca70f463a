/**
 * `pnpm token <account-id> [--ttl 1h]`: prints a signed JWT for local use, with `sub` set to the
 * account and `exp` after the TTL (a number of seconds, or with a unit: 30m, 12h, 7d). Signed with
 * JWT_SECRET, or the development secret the API also falls back to outside production.
 */
import { parseArgs } from 'node:util';
import { loadApiConfig } from './config.js';
import { configuredTokenMinter } from './tokens.js';

const usage = 'usage: pnpm token <account-id> [--ttl 1h]';

/** Seconds in a TTL such as `3600`, `30m`, `12h` or `7d`; NaN when malformed. */
function ttlSeconds(ttl: string): number {
  const match = /^(\d+)([smhd]?)$/.exec(ttl);
  if (!match) return Number.NaN;
  const unit = { '': 1, s: 1, m: 60, h: 3600, d: 86400 }[match[2] as '' | 's' | 'm' | 'h' | 'd'];
  return Number(match[1]) * unit;
}

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { ttl: { type: 'string', default: '1h' }, help: { type: 'boolean', short: 'h' } },
});
const account = positionals[0];
const seconds = ttlSeconds(values.ttl);
if (values.help || account === undefined || positionals.length > 1 || !(seconds > 0)) {
  console.error(usage);
  process.exit(values.help ? 0 : 2);
}
// Like `pnpm start`, a local shell without NODE_ENV is development: the token then matches the API's.
const config = loadApiConfig({ NODE_ENV: 'development', ...process.env });
const mint = configuredTokenMinter(config, seconds * 1000);
if (mint === null) {
  console.error('JWT_PUBLIC_KEY is set: tokens come from your identity provider, not from this command');
  process.exit(2);
}
if (config.jwtWarning) console.error(`warning: ${config.jwtWarning}`);
console.log(mint(account));
