/**
 * The rules of a callback URL: absolute http(s), no credentials, a CALLBACK_PORTS port, not aimed at
 * this network's hosts or addresses (SSRF). The API checks it on write (400), the worker a
 * transformation's URL, and the resolved address again at connect time.
 */
import ipaddr from 'ipaddr.js';
import { addressDenied, callbackPort, portAllowed, type CallbackPolicy } from './callback-policy.js';

/** A refused URL: the JSON pointer of its field and why, as a problem's `errors` entry. */
export interface CallbackUrlError {
  pointer: string;
  detail: string;
}

const blockedHostnames = new Set(['localhost', 'metadata.google.internal', 'metadata']);

/** Internal name suffixes: `.localhost` (RFC 6761), `.local` (RFC 6762), ICANN's `.internal`, Kubernetes' `.svc`. */
const internalSuffixes = ['.localhost', '.local', '.internal', '.svc'];

/**
 * Checks `value` as a callback URL under `policy`; `pointer` names the field, `hint` is appended to
 * a refusal CALLBACK_ALLOW_PRIVATE would lift ('' for none).
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
