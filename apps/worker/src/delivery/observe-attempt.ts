/**
 * What a recorded attempt leaves for operators (docs/operations.md): `webhook_attempt_duration_seconds`
 * by status class, `webhook_deliveries_total` by outcome, `webhook_delivery_latency_seconds` of a
 * confirmed one, and a log line: `info` confirmed, `warn` given up, `debug` failed and retried.
 */
import type { Logger } from 'pino';
import type { WorkerMetrics } from '../metrics.js';
import type { AttemptResult } from './attempt.js';
import { eventAcceptedAt } from './expiry.js';
import type { DeliveryOutcome } from './outcome.js';
import { attemptStatusClass } from './status-class.js';
import type { RoundRef } from './step.js';
import type { LoadedDelivery } from './store.js';

/** Records `result`, an attempt of `ref`'s round to `delivery` that came to `outcome`. */
export function observeAttempt(
  deps: {
    log: Logger;
    metrics: Pick<WorkerMetrics, 'deliveries' | 'attemptDuration' | 'deliveryLatency'>;
  },
  ref: Pick<RoundRef, 'requestId'>,
  delivery: LoadedDelivery,
  result: AttemptResult,
  outcome: DeliveryOutcome,
): void {
  deps.metrics.attemptDuration.observe(
    { status_class: attemptStatusClass(result) },
    result.durationMs / 1000,
  );
  deps.metrics.deliveries.inc({ outcome: outcome.kind });
  const line = {
    deliveryId: delivery.id,
    eventId: delivery.event.id,
    subscriptionId: delivery.subscription.id,
    requestId: ref.requestId,
    attempt: delivery.attemptsMade + 1,
    status: result.statusCode,
    durationMs: result.durationMs,
  };
  if (outcome.kind === 'succeeded') {
    deps.metrics.deliveryLatency.observe((Date.now() - eventAcceptedAt(delivery.event.id)) / 1000);
    deps.log.info(line, 'delivery succeeded');
  } else if (outcome.kind === 'given_up') {
    deps.log.warn(
      { ...line, error: result.errorClass, detail: result.errorDetail, reason: outcome.reason },
      'delivery given up',
    );
  } else {
    deps.log.debug(
      {
        ...line,
        error: result.errorClass,
        detail: result.errorDetail,
        nextAttemptAt: outcome.nextAttemptAt,
      },
      'delivery attempt failed',
    );
  }
}
