/**
 * The breaker's operational events, `subscription.failing` and `subscription.recovered`: stored in
 * `events` and fanned out like `subscription.disabled`; the reconciler republishes a lost fan-out.
 */
import type { Logger } from 'pino';
import type { Pool } from '@webhooks/db';
import {
  subscriptionFailingType,
  subscriptionRecoveredType,
  type EventJobData,
  type ResourceLinks,
} from '@webhooks/shared';
import type { BreakerChange } from './breaker.js';
import { noticeEvent, type StoredNotice } from './attempt-record.js';

/**
 * Stores a notice about subscription `$1` of type `$2`: `$3` (jsonb) with its `subscription_id`,
 * `resource_uri` (under `$4`) and `callback_url` without query or fragment (they may hold a token).
 */
const noticeSql = `
  INSERT INTO events (id, account_id, type, data, occurred_at)
  SELECT uuid_generate_v7(), s.account_id, $2::text,
         jsonb_build_object('subscription_id', s.id, 'resource_uri', $4::text || s.id::text,
                            'callback_url', substring(s.callback_url from '^[^?#]*')) || $3::jsonb,
         now()
  FROM subscriptions s WHERE s.id = $1::uuid
  RETURNING id::text, account_id, type, data, occurred_at`;

/** The `data` of a change's notice, besides the subscription's own fields. */
export function breakerNoticeData(change: BreakerChange): { type: string; data: Record<string, unknown> } {
  if (change.kind === 'closed') {
    return {
      type: subscriptionRecoveredType,
      data: { failing_since: change.failingSince.toISOString() },
    };
  }
  return {
    type: subscriptionFailingType,
    data: {
      reason: change.reason,
      failure_count: change.failuresInRow,
      window_attempts: change.windowAttempts,
      window_failures: change.windowFailures,
      retry_at: change.retryAt.toISOString(),
    },
  };
}

/** What {@link createBreakerNotices} needs. */
export interface BreakerNoticesOptions {
  pool: Pool;
  links: ResourceLinks;
  /** Publishes the stored notices' fan-out jobs; never throws (the reconciler catches up). */
  enqueueNotices(events: EventJobData[]): Promise<void>;
  log: Logger;
}

/** The breaker's `onChange`: stores and fans out the notice; never throws (the breaker's state is in Redis already). */
export function createBreakerNotices(
  options: BreakerNoticesOptions,
): (subscriptionId: string, change: BreakerChange) => Promise<void> {
  return async (subscriptionId, change) => {
    const { type, data } = breakerNoticeData(change);
    try {
      const { rows } = await options.pool.query<StoredNotice>(noticeSql, [
        subscriptionId,
        type,
        JSON.stringify(data),
        options.links.subscription(''),
      ]);
      if (rows.length > 0) await options.enqueueNotices(rows.map(noticeEvent));
    } catch (error) {
      options.log.warn({ err: error, subscriptionId, type }, 'circuit breaker notice not stored');
    }
  };
}
