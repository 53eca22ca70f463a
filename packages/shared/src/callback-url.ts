/**
 * The rules a callback URL must meet when a subscription is created or updated: an absolute
 * http(s) URL without credentials, on a port of CALLBACK_PORTS, not aimed at this network's own
 * hosts or addresses (server-side request forgery). The API checks it when a subscription is
 * written (a clear 400), the worker when a transformation returns another URL; the worker checks
 * the resolved address again at connect time.
 */
import ipaddr from 'ipaddr.js';
import { addressDenied, callbackPort, portAllowed, type CallbackPolicy } from './callback-policy.js';

/** A refused URL: the JSON pointer of its field and why, as a problem's `errors` entry. */
export interface CallbackUrlError {
  pointer: string;
  detail: string;
}

const blockedHostnames = new Set(['localhost', 'metadata.google.internal', 'metadata']);

/**
 * Name suffixes of internal networks: RFC 6761's `.localhost`, RFC 6762's `.local` (mDNS),
 * ICANN's reserved `.internal`, and Kubernetes' `.svc` (`<service>.<namespace>.svc`).
 */
const internalSuffixes = ['.localhost', '.local', '.internal', '.svc'];

/**
 * Checks `value` as a callback URL.
 *
 * @param policy the callback policy (CALLBACK_ALLOW_PRIVATE, CALLBACK_PORTS, CALLBACK_DENY_CIDRS)
 * @param pointer JSON pointer of the field, for the error
 * @param hint appended to a refusal that CALLBACK_ALLOW_PRIVATE would lift (in development, the
 *   name of that setting); empty for none
 * @returns null when acceptable, otherwise the field error to answer 400 with
 */
export function checkCallbackUrl(
  value: string,
  policy: CallbackPolicy,
  pointer = '/callback_url',
  hint = '',
): CallbackUrlError | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { pointer, detail: 'must be an absolute URL, such as https://client.example/hooks' };
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return { pointer, detail: `must use http or https, not ${url.protocol.slice(0, -1)}` };
  }
  if (url.username !== '' || url.password !== '') {
    return {
      pointer,
      detail: 'must not carry credentials (user:password@); put a secret in the path or verify signatures',
    };
  }
  const port = callbackPort(url);
  if (!portAllowed(policy, port)) {
    return {
      pointer,
      detail: `must not use port ${port}: this service delivers to ports 80, 443 and those it allows`,
    };
  }
  // `localhost.` is `localhost`: a trailing dot only makes a name fully qualified.
  const host = url.hostname
    .replace(/^\[|\]$/g, '')
    .replace(/\.$/, '')
    .toLowerCase();
  if (ipaddr.isValid(host) && addressDenied(policy, host)) {
    return { pointer, detail: `must not point at ${host}: this address is refused by the operator` };
  }
  if (policy.allowPrivate) return null;
  if (blockedHostnames.has(host) || internalSuffixes.some((suffix) => host.endsWith(suffix))) {
    return { pointer, detail: `must not point at ${host}: loopback and internal hosts are refused${hint}` };
  }
  if (ipaddr.isValid(host)) {
    const range = ipaddr.process(host).range();
    if (range !== 'unicast') {
      return {
        pointer,
        detail: `must not point at a ${range} address (${host}); only public addresses receive webhooks${hint}`,
      };
    }
  } else if (!host.includes('.')) {
    return {
      pointer,
      detail: `must not point at ${host}: a single-label name resolves inside this network; use a fully qualified name${hint}`,
    };
  }
  return null;
}
