/**
 * The `status_class` label of an attempt in the worker's metrics: a pure rule, unit-tested in
 * test/metrics-rules.test.ts.
 */
import { httpStatusClass } from '@webhooks/shared';
import type { AttemptResult } from './attempt.js';

/**
 * The `status_class` of an attempt: `2xx` … `5xx` when the callback answered, otherwise how it
 * failed: `timeout`, `connect_error` (refused, reset, DNS, a broker out of reach), `blocked`
 * (SSRF guard), `refused` (a broker refused or could not route the message), `throttled` (an AWS
 * service's throttle) or `other`; a
 * broker's confirmation is `confirmed`.
 */
export function attemptStatusClass(result: Pick<AttemptResult, 'statusCode' | 'errorClass'>): string {
  if (result.statusCode !== null) return httpStatusClass(result.statusCode);
  switch (result.errorClass) {
    case null:
      return 'confirmed';
    case 'timeout':
      return 'timeout';
    case 'connection_refused':
    case 'connection_reset':
    case 'dns':
    case 'broker_unavailable':
      return 'connect_error';
    case 'broker_refused':
    case 'broker_unroutable':
      return 'refused';
    case 'blocked_address':
      return 'blocked';
    case 'broker_throttled':
      return 'throttled';
    default:
      return 'other';
  }
}
