/**
 * The rules a callback URL must meet when a subscription is created or updated: an absolute
 * http(s) URL without credentials, not aimed at this network's own addresses (server-side request
 * forgery). The worker checks the resolved address again at connect time; this early check gives
 * the client a clear 400 instead of a delivery that can never succeed.
 */
import ipaddr from 'ipaddr.js';
import type { FieldError } from './problem.js';

const blockedHostnames = new Set(['localhost', 'metadata.google.internal', 'metadata']);

/**
 * Checks `value` as a callback URL.
 *
 * @param allowPrivate CALLBACK_ALLOW_PRIVATE: accept loopback and private addresses (development)
 * @param pointer JSON pointer of the field, for the error
 * @returns null when acceptable, otherwise the field error to answer 400 with
 */
export function checkCallbackUrl(
  value: string,
  allowPrivate: boolean,
  pointer = '/callback_url',
): FieldError | null {
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
  if (allowPrivate) return null;
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (blockedHostnames.has(host) || host.endsWith('.localhost')) {
    return { pointer, detail: `must not point at ${host}: loopback and internal hosts are refused` };
  }
  if (ipaddr.isValid(host)) {
    const range = ipaddr.process(host).range();
    if (range !== 'unicast') {
      return {
        pointer,
        detail: `must not point at a ${range} address (${host}); only public addresses receive webhooks`,
      };
    }
  }
  return null;
}
