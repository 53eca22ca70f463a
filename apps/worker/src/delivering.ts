/**
 * The `deliveries` side of a worker process (part of `worker.ts`'s composition): sender, store, and
 * per consumed shard the gate, claims and BullMQ worker; and the `verifications` worker.
 */
import { createReceiverAuthorizer } from './delivery/receiver-authorization.js';
import { createRequire } from 'node:module';
import { Worker, type WorkerOptions } from 'bullmq';
import type { Logger } from 'pino';
import type { Pool } from '@webhooks/db';
import {
  createPipelinedConnection,
  deliveryJobId,
  queueNames,
  resourceLinks,
  createTransformationRunner,
  transformationLimitsFromEnv,
  type DeliveryJobData,
  type EventJobData,
  type RedisConnection,
  type VerificationJobData,
} from '@webhooks/shared';
import { suppressedUnlessRecording } from '@webhooks/shared/unsampled-work';
import type { WorkerConfig } from './config.js';
import { createAttemptSender } from './delivery/attempt.js';
import { createBrokerPublishers, createDestinationSender } from './destinations/registry.js';
import { createRelaySender } from './destinations/relay.js';
import type { DeliveryPolicy } from './delivery/backoff.js';
import { createAttemptClaims } from './delivery/claim.js';
import { createDeliver, type DeliverDeps } from './delivery/deliver.js';
import { createDeliveryGate } from './delivery/gate.js';
import { createSubscriptionBreaker } from './delivery/breaker.js';
import { createBreakerNotices } from './delivery/breaker-notices.js';
import type { FifoHeads } from './delivery/fifo.js';
import { createInOrder } from './delivery/in-order.js';
import { createHostGate, hostCapPerShard } from './delivery/host-gate.js';
import { inSlotWaitRule } from './delivery/in-slot-wait.js';
import { createParkedDeliveries } from './delivery/parked.js';
import { createWake, type Wake } from './delivery/wake.js';
import {
  createDeliveryProcessor,
  deliveryBackoffStrategy,
  type DeliveryJobResult,
} from './delivery/processor.js';
import { createDeliveryStore } from './delivery/store.js';
import { watchedProcessor, type ConsumerActivity } from './consumer-watchdog.js';
import type { WorkerMetrics } from './metrics.js';
import type { ShardedQueues } from './shard-queues.js';
import { createVerificationProcessor, type VerificationResult } from './verification/processor.js';

/** How long a gate or host command may wait for Redis (ms): then the step fails unspent, a release leaves its lease. */
const gateCommandTimeoutMs = 2_000;

/** FIFO heads one job hands over at most: a backlog rarely pays a queue round trip, the slot still turns over. */
const orderedHandOverHeads = 100;

/** A just-verified subscription's waiting deliveries sent at once, oldest first; the rest look again every 10 s. */
const verifiedWakeLimit = 1_000;

const { version } = createRequire(import.meta.url)('../package.json') as { version: string };

/** The `User-Agent` of every delivery request. */
export const userAgent = `webhook-service/${version} (+https://www.standardwebhooks.com)`;

/** The `deliveries` side of a worker process: sender, store, and per consumed shard a gate and BullMQ worker. */
export function startDeliveries(
  config: WorkerConfig,
  deps: {
    pool: Pool;
    producer: RedisConnection;
    sharded: ShardedQueues;
    policy: DeliveryPolicy;
    lockDuration: number;
    common: Omit<WorkerOptions, 'prefix'>;
    log: Logger;
    metrics: WorkerMetrics;
    /** Ordered delivery (fifo.ts): the heads' jobs, and the watch on earlier events' fan-outs. */
    fifo: DeliverDeps['fifo'] & { heads: FifoHeads };
    /** Wakes waiting delivery jobs in their subscription's shard. */
    wake: Wake;
  },
) {
  const { sharded, policy, log, metrics, wake } = deps;
  const sender = createAttemptSender({
    timeoutMs: config.DELIVERY_TIMEOUT_MS,
    policy: config.callbackPolicy,
    // Inline first attempts (as many as WORKER_CONCURRENCY) run beside the jobs' attempts.
    maxSockets: 2 * config.WORKER_CONCURRENCY,
    userAgent,
    dnsServers: config.dnsServers,
    dnsTimeoutMs: config.DNS_TIMEOUT_MS,
    ...(config.callbackCertificateAuthorities === undefined
      ? {}
      : { extraCertificateAuthorities: config.callbackCertificateAuthorities }),
    ...(config.proxyUrl === undefined ? {} : { proxyUrl: config.proxyUrl }),
  });
  const authorizer = createReceiverAuthorizer(sender.fetch);
  const destinations = createDestinationSender(
    sender,
    config.brokers,
    createBrokerPublishers(config.brokers, { timeoutMs: config.DELIVERY_TIMEOUT_MS, log }),
    createRelaySender({
      redis: deps.producer,
      blocking() {
        // BLPOP waits a second at most: a command timeout past it.
        const connection = createPipelinedConnection(config.redis, 5_000);
        connection.on('error', (error) => log.warn({ err: error }, 'redis connection error (relay)'));
        return connection;
      },
      prefix: config.keyPrefix,
      timeoutMs: config.DELIVERY_TIMEOUT_MS,
      maxSessionBytes: config.RELAY_SESSION_MAX_BYTES,
      log,
    }),
  );
  const transformations = config.TRANSFORMATIONS
    ? createTransformationRunner(transformationLimitsFromEnv(config), config.callbackPolicy)
    : null;
  const links = resourceLinks(config.PUBLIC_BASE_URL);
  const enqueueNotices = async (notices: EventJobData[]) => {
    try {
      await sharded.addNotices(notices);
    } catch (error) {
      log.warn({ err: error }, 'operational events not fanned out yet; the reconciler will');
    }
  };
  const store = createDeliveryStore(deps.pool, {
    disableAfter: config.SUBSCRIPTION_DISABLE_AFTER,
    secretBox: config.secretBox,
    links,
    enqueueNotices,
  });
  const breakerNotices = createBreakerNotices({ pool: deps.pool, links, enqueueNotices, log });
  // The gates' small scripts issued in one event-loop turn go as one write (not on a Cluster).
  const gateRedis = createPipelinedConnection(config.redis, gateCommandTimeoutMs);
  gateRedis.on('error', (error) => log.warn({ err: error }, 'redis connection error'));
  const hostCap = hostCapPerShard(config.HOST_MAX_IN_FLIGHT, config.QUEUE_SHARDS);
  /** Each shard's host cap, by its queue prefix: a host's slots sit beside its subscriptions' gates. */
  const hostGates = new Map(
    sharded.all.map(({ prefix }) => [
      prefix,
      createHostGate({
        redis: gateRedis,
        prefix,
        maxInFlight: hostCap,
        leaseMs: deps.lockDuration,
        wake: (jobId) => wake([jobId]),
        log,
      }),
    ]),
  );
  /** The attempt path of each consumed shard, by its queue prefix. */
  const delivers = new Map<string, ReturnType<typeof createDeliver>>();
  const consumers = sharded.consumed.map((shard) => {
    const wakeInShard = createWake({ queueOf: () => shard.deliveries, log });
    const gate = createDeliveryGate({
      redis: gateRedis,
      prefix: shard.prefix,
      bounds: config.inFlightBounds,
      scheduler: shard.scheduler.turns,
      leaseMs: deps.lockDuration,
      hostCap,
      // Parked deliveries of a hanging callback come back at most once a minute: cheap however many wait.
      maxParkMs: 60_000,
      inSlotWait: inSlotWaitRule(config.WORKER_CONCURRENCY),
      wake: (jobId) => wakeInShard([jobId]),
      log,
      metrics,
      breaker: createSubscriptionBreaker({
        redis: gateRedis,
        prefix: shard.prefix,
        breaker: config.breaker,
        onChange: breakerNotices,
        log,
        metrics,
      }),
    });
    const claims = createAttemptClaims({
      redis: gateRedis,
      prefix: shard.prefix,
      leaseMs: deps.lockDuration,
      log,
    });
    const deliver = createDeliver({
      store,
      sender: destinations,
      authorizer,
      claims,
      gate,
      hostGate: hostGates.get(shard.prefix)!,
      transformations,
      policy,
      maxAgeMs: config.DELIVERY_MAX_AGE * 1000,
      log,
      metrics,
      fifo: deps.fifo,
      parked: createParkedDeliveries({ redis: gateRedis, prefix: shard.prefix, log }),
    });
    delivers.set(shard.prefix, deliver);
    const handOver = createInOrder({
      heads: deps.fifo.heads,
      loadHead: store.loadHead,
      claims,
      earlierFanOut: deps.fifo.earlierFanOut,
      deliver,
      async addJob({ name, data, opts }) {
        await shard.deliveries.add(name, data, opts);
      },
      maxAttempts: policy.maxAttempts,
      maxHeads: orderedHandOverHeads,
      // Called only while the worker below runs a job.
      closing: () => worker?.closing !== undefined,
      log,
    });
    const activity: ConsumerActivity = { running: 0, lastStartedMs: Date.now() };
    const processor = watchedProcessor(createDeliveryProcessor({ deliver, handOver, policy, log }), activity);
    let worker: Worker<DeliveryJobData, DeliveryJobResult> | undefined;
    /**
     * A new Worker on the shard's queue, on `connection` (the shared one by default), held as the
     * current one (the watchdog starts another if it wedges).
     */
    const start = (connection: WorkerOptions['connection'] = deps.common.connection) =>
      (worker = new Worker<DeliveryJobData, DeliveryJobResult>(
        queueNames.deliveries,
        config.tracing ? suppressedUnlessRecording(processor) : processor,
        {
          ...deps.common,
          connection,
          prefix: shard.prefix,
          settings: { backoffStrategy: deliveryBackoffStrategy(policy) },
        },
      ));
    return { shard, activity, first: start(), start };
  });
  // Challenges are rare and each waits on one callback: a few at a time, beside the deliveries.
  const verifications = new Worker<VerificationJobData, VerificationResult>(
    queueNames.verifications,
    createVerificationProcessor({
      pool: deps.pool,
      sender,
      authorizer,
      secretBox: config.secretBox,
      hostGate: (subscriptionId) => hostGates.get(sharded.ofSubscription(subscriptionId).prefix)!,
      async wakeDeliveries(subscriptionId) {
        try {
          const pending = await store.pendingRounds(subscriptionId, verifiedWakeLimit);
          await wake(pending.map(({ eventId, round }) => deliveryJobId(eventId, subscriptionId, round)));
        } catch (error) {
          log.debug(
            { err: error, subscriptionId },
            'deliveries of a verified callback not woken; they look again',
          );
        }
      },
      log,
    }),
    { ...deps.common, prefix: config.keyPrefix, concurrency: 5 },
  );
  verifications.on('failed', (job, error) =>
    log.info(
      { subscriptionId: job?.data.subscriptionId, reason: error.message },
      'callback verification failed',
    ),
  );
  verifications.on('error', (error) => log.error({ err: error }, 'worker error'));
  return {
    /** Each consumed shard's consumer: its first Worker, and how to start another. */
    consumers,
    verifications,
    /** Closes the sender, broker connections, gates' connection and transformation threads, once the workers are. */
    close() {
      destinations.close();
      gateRedis.disconnect();
      void transformations?.close();
    },
    /** The attempt path of a shard (its queue prefix), or null when this process does not consume it. */
    deliverFor: (prefix: string) => delivers.get(prefix) ?? null,
  };
}
