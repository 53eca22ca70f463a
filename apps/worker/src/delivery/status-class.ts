/**
 * The `status_class` label of an attempt in the worker's metrics: a pure rule, unit-tested in
 * test/metrics-rules.test.ts.
 */
import { httpStatusClass } from '@webhooks/shared';
import type { AttemptResult } from './attempt.js';

/**
 * The `status_class` of an attempt: `2xx` … `5xx` when the callback answered, otherwise how it
 * failed: `timeout`, `connect_error` (refused, reset, DNS), `blocked` (SSRF guard) or `other`.
 */
export function attemptStatusClass(result: Pick<AttemptResult, 'statusCode' | 'errorClass'>): string {
  if (result.statusCode !== null) return httpStatusClass(result.statusCode);
  switch (result.errorClass) {
    case 'timeout':
      return 'timeout';
    case 'connection_refused':
    case 'connection_reset':
    case 'dns':
      return 'connect_error';
    case 'blocked_address':
      return 'blocked';
    default:
      return 'other';
  }
}
