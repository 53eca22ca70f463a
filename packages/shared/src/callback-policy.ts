/**
 * Where callbacks may point, checked by the API when a URL is written (400) and by the worker when
 * it connects. CALLBACK_ALLOW_PRIVATE lets private addresses through (development and test only);
 * CALLBACK_PORTS limits ports; CALLBACK_DENY_CIDRS adds to {@link defaultDeniedCidrs}.
 */
import ipaddr from 'ipaddr.js';
import Type from 'typebox';
import { ConfigError } from '@webhooks/publisher';

/** Refused whatever the settings: 168.63.129.16, Azure's host endpoint, public by range, seen from every VM. */
export const defaultDeniedCidrs = ['168.63.129.16/32'];

/** The variables of the callback policy, part of both services' schemas. */
export const callbackPolicyEnv = {
  CALLBACK_ALLOW_PRIVATE: Type.Boolean({
    default: false,
    description:
      'Allow callback URLs on loopback, private, link-local and metadata addresses; refused at start outside NODE_ENV development and test',
  }),
  CALLBACK_PORTS: Type.String({
    default: '80,443,1024-65535',
    description: 'Ports a callback URL may use: comma-separated ports and ranges (`low-high`)',
  }),
  CALLBACK_DENY_CIDRS: Type.String({
    default: '',
    description:
      'Address ranges no callback may reach, comma-separated CIDRs (`10.20.0.0/16`, `2001:db8::/32`), beside the built-in 168.63.129.16/32',
  }),
  CALLBACK_VERIFICATION: Type.Union([Type.Literal('off'), Type.Literal('challenge')], {
    default: 'off',
    description:
      '`challenge`: a new subscription, or one whose callback_url changes, stays `pending` (receiving nothing) until its callback answers a signed challenge with HTTP 200 and the challenge, and a transformation may not send to another origin; `off`: subscriptions are active at once',
  }),
};

/** The callback policy after parsing. */
export interface CallbackPolicy {
  allowPrivate: boolean;
  /** Inclusive port ranges, `[low, high]`. */
  ports: ReadonlyArray<readonly [number, number]>;
  /** CIDRs refused, the built-in ones first. */
  denyCidrs: readonly string[];
  /** CALLBACK_VERIFICATION=challenge: a transformation may only send to its callback's verified origin. */
  verification?: boolean;
}

/**
 * Parses the policy's variables.
 * @throws ConfigError naming the variable: a malformed port, range or CIDR, or CALLBACK_ALLOW_PRIVATE
 *   outside development and test
 */
export function parseCallbackPolicy(config: {
  NODE_ENV: string;
  CALLBACK_ALLOW_PRIVATE: boolean;
  CALLBACK_PORTS: string;
  CALLBACK_DENY_CIDRS: string;
  CALLBACK_VERIFICATION: 'off' | 'challenge';
}): CallbackPolicy {
  if (config.CALLBACK_ALLOW_PRIVATE && config.NODE_ENV !== 'development' && config.NODE_ENV !== 'test') {
    throw new ConfigError(
      `Invalid environment variable CALLBACK_ALLOW_PRIVATE=true: it opens the internal network to every account's callbacks, so it is refused outside NODE_ENV development or test (NODE_ENV is ${JSON.stringify(config.NODE_ENV)})`,
    );
  }
  const ports = config.CALLBACK_PORTS.split(',').map((item) => {
    const match = /^\s*(\d{1,5})(?:\s*-\s*(\d{1,5}))?\s*$/.exec(item);
    const low = Number(match?.[1]);
    const high = Number(match?.[2] ?? match?.[1]);
    if (match === null || low < 1 || high > 65535 || low > high)
      throw new ConfigError(
        `Invalid environment variable CALLBACK_PORTS: ${JSON.stringify(item.trim())} is not a port or a range low-high of ports 1 to 65535`,
      );
    return [low, high] as const;
  });
  const own = config.CALLBACK_DENY_CIDRS.split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  for (const cidr of own) {
    try {
      ipaddr.parseCIDR(cidr);
    } catch {
      throw new ConfigError(
        `Invalid environment variable CALLBACK_DENY_CIDRS: ${JSON.stringify(cidr)} is not a CIDR such as 10.20.0.0/16`,
      );
    }
  }
  return {
    allowPrivate: config.CALLBACK_ALLOW_PRIVATE,
    ports,
    denyCidrs: [...defaultDeniedCidrs, ...own],
    verification: config.CALLBACK_VERIFICATION === 'challenge',
  };
}

/** The port `url` connects to: its own, or its scheme's (80 for http, 443 for https). */
export function callbackPort(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

/** Whether `port` is one of the policy's ports. */
export function portAllowed(policy: Pick<CallbackPolicy, 'ports'>, port: number): boolean {
  return policy.ports.some(([low, high]) => port >= low && port <= high);
}

/** Whether the IP address `address` falls in one of the policy's refused ranges. */
export function addressDenied(policy: Pick<CallbackPolicy, 'denyCidrs'>, address: string): boolean {
  const parsed = ipaddr.process(address);
  return policy.denyCidrs.some((cidr) => {
    const [range, bits] = ipaddr.parseCIDR(cidr);
    return range.kind() === parsed.kind() && parsed.match(range, bits);
  });
}

/**
 * Whether a callback may reach `address`: never CALLBACK_DENY_CIDRS or link-local (metadata,
 * 169.254.169.254), else only public unicast unless CALLBACK_ALLOW_PRIVATE. request-filtering-agent's
 * rule, for the connections it does not make (a proxied attempt checks the host's addresses first).
 */
export function addressAllowed(
  policy: Pick<CallbackPolicy, 'allowPrivate' | 'denyCidrs'>,
  address: string,
): boolean {
  if (!ipaddr.isValid(address) || addressDenied(policy, address)) return false;
  const range = ipaddr.process(address).range();
  if (range === 'linkLocal') return false;
  return policy.allowPrivate || range === 'unicast';
}
