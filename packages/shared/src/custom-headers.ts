/**
 * Custom headers per subscription (a gateway's API key, a tenant). Names are HTTP tokens (RFC 9110
 * §5.6.2), stored lower-case; values field values without controls (§5.5). Refused: `webhook-*`,
 * framing, routing and hop-by-hop names (§7.6.1), `expect`, `user-agent`, the proxy's.
 */
import type { SecretBox } from './secret-box.js';

/** Most custom headers a subscription may have. */
export const maxCustomHeaders = 20;
/** Longest name, in characters. */
export const maxCustomHeaderNameLength = 64;
/** Longest value, in characters. */
export const maxCustomHeaderValueLength = 1024;
/** Most bytes of all names and values together (UTF-8). */
export const maxCustomHeadersBytes = 4096;

/** Header names the service sets or that frame or route the request. */
const reservedNames = new Set([
  'host',
  'content-type',
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'te',
  'trailer',
  'upgrade',
  'expect',
  'user-agent',
  'proxy-authorization',
  'proxy-connection',
]);

/** An HTTP token (RFC 9110 §5.6.2). */
const token = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A field value (RFC 9110 §5.5): visible ASCII, inner spaces and tabs, obs-text; no control, no edge space. */
const fieldValue = /^[\x21-\x7e\x80-\xff]([\t\x20-\x7e\x80-\xff]*[\x21-\x7e\x80-\xff])?$/;

/** One refused header: the JSON pointer of the field and why. */
export interface CustomHeaderProblem {
  pointer: string;
  detail: string;
}

/**
 * Checks custom headers as a client sent them.
 * @returns the headers with lower-case names, or the problems (each naming `/headers/<name>`)
 */
export function checkCustomHeaders(
  headers: Record<string, string>,
): { headers: Record<string, string> } | { problems: CustomHeaderProblem[] } {
  const problems: CustomHeaderProblem[] = [];
  const normalized: Record<string, string> = {};
  const names = Object.keys(headers);
  if (names.length > maxCustomHeaders)
    problems.push({ pointer: '/headers', detail: `at most ${maxCustomHeaders} headers` });
  let bytes = 0;
  for (const name of names) {
    const value = headers[name]!;
    const pointer = `/headers/${name.replace(/~/g, '~0').replace(/\//g, '~1')}`;
    const lower = name.toLowerCase();
    bytes += Buffer.byteLength(name) + Buffer.byteLength(value);
    if (!token.test(name) || name.length > maxCustomHeaderNameLength)
      problems.push({
        pointer,
        detail: `a header name is an HTTP token (letters, digits and !#$%&'*+-.^_\`|~) of at most ${maxCustomHeaderNameLength} characters`,
      });
    else if (reservedNames.has(lower) || lower.startsWith('webhook-'))
      problems.push({
        pointer,
        detail: `${lower} is set by the service and cannot be sent as a custom header`,
      });
    else if (lower in normalized) problems.push({ pointer, detail: `${lower} is given twice` });
    else if (!fieldValue.test(value) || value.length > maxCustomHeaderValueLength)
      problems.push({
        pointer,
        detail: `a header value has 1 to ${maxCustomHeaderValueLength} characters, no control character and no space at either end`,
      });
    else normalized[lower] = value;
  }
  if (bytes > maxCustomHeadersBytes)
    problems.push({
      pointer: '/headers',
      detail: `at most ${maxCustomHeadersBytes} bytes of names and values`,
    });
  return problems.length > 0 ? { problems } : { headers: normalized };
}

/** The value shown in place of a custom header's value where it is not asked for explicitly. */
export const maskedHeaderValue = '********';

/** `headers` with every value masked (what a subscription shows). */
export function maskCustomHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.keys(headers).map((name) => [name, maskedHeaderValue]));
}

/**
 * `subscriptionId`'s custom headers, stored as one JSON object sealed by the secret box (null: none).
 * @returns the headers by lower-case name, `{}` for none
 * @throws SecretDecryptionError when no configured key opens them
 */
export function openCustomHeaders(
  stored: string | null,
  subscriptionId: string,
  secretBox: Pick<SecretBox, 'open'>,
): Record<string, string> {
  return stored === null
    ? {}
    : (JSON.parse(secretBox.open(stored, subscriptionId)) as Record<string, string>);
}
