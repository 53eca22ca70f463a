/**
 * The worker's Prometheus metrics (prom-client, its own registry, `/metrics`; docs/operations.md
 * lists them). No subscription, account or event id is a label, so a million subscriptions add no series.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Queue } from 'bullmq';

/** How often queue lengths are read from Redis, in ms: never per scrape. */
export const queueSampleIntervalMs = 5_000;

/** The `outcome` of a delivery job run. */
export type DeliveryMetricOutcome = 'succeeded' | 'retry' | 'given_up' | 'cancelled' | 'dropped';

/** The BullMQ job states `webhook_queue_jobs` reports. */
export const sampledJobStates = [
  'waiting',
  'prioritized',
  'active',
  'delayed',
  'failed',
  'completed',
] as const;

/** The worker's metrics. */
export interface WorkerMetrics {
  registry: Registry;
  deliveries: Counter<'outcome'>;
  attemptDuration: Histogram<'status_class'>;
  attemptInFlightLimit: Histogram;
  deliveryLatency: Histogram;
  queueJobs: Gauge<'queue' | 'state' | 'shard'>;
  throttled: Counter;
  parked: Counter;
  breakerTransitions: Counter;
  inlineAttempts: Counter<'result'>;
  redriven: Counter<'kind'>;
  schedulesRestored: Counter<'task'>;
  consumerRestarts: Counter<'queue' | 'shard'>;
  /**
   * Samples every shard's job counts and backlog, and `subscriptionsByStatus`, now and every
   * {@link queueSampleIntervalMs}, and whether Redis and PostgreSQL answered; returns the stop.
   */
  sampleQueues(
    shards: ReadonlyArray<SampledShard>,
    subscriptionsByStatus: () => Promise<Array<{ status: string; count: number }>>,
  ): () => void;
}

/** What the queue sampler reads of a queue shard (`ShardQueues` in shard-queues.ts). */
export interface SampledShard {
  /** The shard's label in metrics. */
  label: string;
  events: Pick<Queue, 'name' | 'getJobCounts'>;
  deliveries: Pick<Queue, 'name' | 'getJobCounts'>;
  /** Its account scheduler's backlog (`AccountScheduler.backlog`). */
  scheduler: { backlog(): Promise<{ accounts: number; deliveries: number }> };
}

/** Creates the registry and every metric on it. */
export function createWorkerMetrics(): WorkerMetrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const registers = [registry];
  const queueJobs = new Gauge({
    name: 'webhook_queue_jobs',
    help: `Jobs in each BullMQ queue by state and queue shard, sampled every ${queueSampleIntervalMs / 1000} s (the same for every worker: aggregate with max by shard, then sum)`,
    labelNames: ['queue', 'state', 'shard'],
    registers,
  });
  const schedulerWaiting = new Gauge({
    name: 'webhook_scheduler_waiting',
    help: `First deliveries waiting for their account's turn (what="deliveries") and the accounts they belong to (what="accounts"), by queue shard, sampled every ${queueSampleIntervalMs / 1000} s (the same for every worker: aggregate with max by shard, then sum)`,
    labelNames: ['what', 'shard'],
    registers,
  });
  const subscriptions = new Gauge({
    name: 'webhook_subscriptions',
    help: `Subscriptions by status (active, disabled, pending), sampled every ${queueSampleIntervalMs / 1000} s (the same for every worker: aggregate with max)`,
    labelNames: ['status'],
    registers,
  });
  const dependencyUp = new Gauge({
    name: 'webhook_dependency_up',
    help: `1 when the dependency (postgresql, redis) answered this worker's last sample, 0 when it did not; sampled every ${queueSampleIntervalMs / 1000} s`,
    labelNames: ['dependency'],
    registers,
  });
  return {
    registry,
    deliveries: new Counter({
      name: 'webhook_deliveries_total',
      help: 'Delivery steps by what they came to: inline first attempts and delivery job runs',
      labelNames: ['outcome'],
      registers,
    }),
    attemptDuration: new Histogram({
      name: 'webhook_attempt_duration_seconds',
      help: 'Attempts sent, from connecting to the last byte of the answer, in seconds',
      labelNames: ['status_class'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    }),
    attemptInFlightLimit: new Histogram({
      name: 'webhook_attempt_in_flight_limit',
      help: "The subscription's in-flight limit each attempt was sent under (adaptive: lowered on timeouts, raised for a fast callback)",
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      registers,
    }),
    deliveryLatency: new Histogram({
      name: 'webhook_delivery_latency_seconds',
      help: "From the event's acceptance to its delivery's confirmation (HTTP 200), in seconds",
      buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600],
      registers,
    }),
    queueJobs,
    throttled: new Counter({
      name: 'webhook_subscriptions_throttled_total',
      help: 'Times a subscription went from its full in-flight limit to a lowered one (it timed out or answered 429/503)',
      registers,
    }),
    breakerTransitions: new Counter({
      name: 'webhook_subscription_breaker_transitions_total',
      help: "Subscriptions' circuit breakers opened (after failing attempts), reopened (their probe failed) and closed (an attempt confirmed), by transition",
      labelNames: ['transition'],
      registers,
    }),
    parked: new Counter({
      name: 'webhook_deliveries_parked_total',
      help: 'Delivery jobs put back to wait because their subscription had no free in-flight slot',
      registers,
    }),
    inlineAttempts: new Counter({
      name: 'webhook_inline_attempts_total',
      help: 'First deliveries taken to attempt without a delivery job (by the fan-out or the account scheduler), by result: sent (attempted, or ended without a request), waiting (handed to a delayed job: gate, rate limit, host cap), skipped (given a job at once: no inline capacity, another shard, a dependency fault)',
      labelNames: ['result'],
      registers,
    }),
    consumerRestarts: new Counter({
      name: 'webhook_worker_consumer_restarts_total',
      help: 'Queue consumers closed and started again by the watchdog: jobs waited WORKER_WATCHDOG_MS with free slots and none started, by queue and shard',
      labelNames: ['queue', 'shard'],
      registers,
    }),
    schedulesRestored: new Counter({
      name: 'webhook_maintenance_schedules_restored_total',
      help: 'Maintenance schedules (reconcile, retention) a worker found missing from Redis, or stuck, and set again, by task',
      labelNames: ['task'],
      registers,
    }),
    redriven: new Counter({
      name: 'webhook_reconciler_redriven_total',
      help: 'Jobs the reconciler re-created or retried because a fault had lost or failed them',
      labelNames: ['kind'],
      registers,
    }),
    sampleQueues(shards, subscriptionsByStatus) {
      const sample = async () => {
        const postgres = subscriptionsByStatus().then(
          (rows) => {
            for (const status of ['active', 'disabled', 'pending'])
              subscriptions.set({ status }, rows.find((row) => row.status === status)?.count ?? 0);
            dependencyUp.set({ dependency: 'postgresql' }, 1);
          },
          () => dependencyUp.set({ dependency: 'postgresql' }, 0),
        );
        const redis = Promise.all(
          shards.flatMap(({ label: shard, events, deliveries, scheduler }) => [
            ...[events, deliveries].map(async (queue) => {
              const counts = await queue.getJobCounts(...sampledJobStates);
              for (const state of sampledJobStates)
                queueJobs.set({ queue: queue.name, state, shard }, counts[state] ?? 0);
            }),
            scheduler.backlog().then((backlog) => {
              schedulerWaiting.set({ what: 'accounts', shard }, backlog.accounts);
              schedulerWaiting.set({ what: 'deliveries', shard }, backlog.deliveries);
            }),
          ]),
        ).then(
          () => dependencyUp.set({ dependency: 'redis' }, 1),
          // Redis is away: the last values stay, and /readyz says why.
          () => dependencyUp.set({ dependency: 'redis' }, 0),
        );
        await Promise.all([postgres, redis]);
      };
      void sample();
      const timer = setInterval(() => void sample(), queueSampleIntervalMs).unref();
      return () => clearInterval(timer);
    },
  };
}
