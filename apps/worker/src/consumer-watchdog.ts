/**
 * The consumer watchdog: a BullMQ Worker whose queue has jobs waiting, that has free slots, and that
 * has started no job for WORKER_WATCHDOG_MS is closed and started again, on a new connection. A
 * Worker's connections can wedge for good (after a Redis Cluster topology change,
 * taskforcesh/bullmq#4138, or on a half-open socket); its maintainer suggests a watchdog
 * (taskforcesh/bullmq#3185).
 */
import type { Job, Queue, Worker } from 'bullmq';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';

/** What the watchdog reads of one consumer at a check; times in ms since the epoch. */
export interface ConsumerSample {
  /** Jobs its queue holds ready to be taken (waiting and prioritized). */
  waiting: number;
  /** Jobs it is running, and how many it may run at once. */
  running: number;
  concurrency: number;
  /** Paused on purpose (draining, a test): never wedged. */
  paused: boolean;
  /** When it last started a job, or when it last had nothing it could take, whichever is later. */
  lastProgressMs: number;
  nowMs: number;
}

/** Whether a consumer is wedged: work it could take has waited `boundMs` with none started. */
export function isWedged(sample: ConsumerSample, boundMs: number): boolean {
  return (
    !sample.paused &&
    sample.waiting > 0 &&
    sample.running < sample.concurrency &&
    sample.nowMs - sample.lastProgressMs >= boundMs
  );
}

/** A job processor's activity: jobs running, and when the last one started. */
export interface ConsumerActivity {
  running: number;
  lastStartedMs: number;
}

/** `processor` counting its runs into `activity`. */
export function watchedProcessor<T, R>(
  processor: (job: Job<T, R>, token?: string) => Promise<R>,
  activity: ConsumerActivity,
): (job: Job<T, R>, token?: string) => Promise<R> {
  return async (job, token) => {
    activity.running += 1;
    activity.lastStartedMs = Date.now();
    try {
      return await processor(job, token);
    } finally {
      activity.running -= 1;
    }
  };
}

/** One consumer the watchdog keeps: its queue (for the counts), how to start it, where it is held. */
export interface WatchedConsumer {
  /** `<queue> <shard prefix>`, for the log and the metric. */
  queue: string;
  shard: string;
  counts: Pick<Queue, 'getJobCounts'>;
  activity: ConsumerActivity;
  concurrency: number;
  /** The running Worker. */
  current(): Worker;
  /** Starts a new Worker and holds it as current. */
  restart(): Worker;
}

export interface ConsumerWatchdogOptions {
  consumers: readonly WatchedConsumer[];
  /** WORKER_WATCHDOG_MS: how long waiting work may go untaken, in ms. */
  boundMs: number;
  /** `webhook_worker_consumer_restarts_total`, by queue and shard. */
  restarts: Counter<'queue' | 'shard'>;
  log: Logger;
}

/** Checks every consumer a quarter of the bound apart; returns the stop, which waits for a restart under way. */
export function startConsumerWatchdog(options: ConsumerWatchdogOptions): () => Promise<void> {
  const { boundMs, log } = options;
  const lastIdleMs = new Map<WatchedConsumer, number>(options.consumers.map((c) => [c, Date.now()]));
  let stopped = false;
  let checking: Promise<void> = Promise.resolve();

  const checkOne = async (consumer: WatchedConsumer) => {
    const worker = consumer.current();
    const counts = await consumer.counts.getJobCounts('waiting', 'prioritized');
    const waiting = (counts.waiting ?? 0) + (counts.prioritized ?? 0);
    const nowMs = Date.now();
    const { running } = consumer.activity;
    if (waiting === 0 || running >= consumer.concurrency) lastIdleMs.set(consumer, nowMs);
    const sample: ConsumerSample = {
      waiting,
      running,
      concurrency: consumer.concurrency,
      paused: worker.isPaused() || !worker.isRunning(),
      lastProgressMs: Math.max(consumer.activity.lastStartedMs, lastIdleMs.get(consumer) ?? nowMs),
      nowMs,
    };
    if (!isWedged(sample, boundMs) || stopped) return;
    log.warn(
      {
        queue: consumer.queue,
        shard: consumer.shard,
        waiting,
        running,
        idleMs: nowMs - sample.lastProgressMs,
      },
      'consumer took no waiting job within WORKER_WATCHDOG_MS: closed and started again',
    );
    options.restarts.inc({ queue: consumer.queue, shard: consumer.shard });
    // A new Worker first, so the queue is served while the wedged one lets its jobs finish; its
    // close is not awaited, since what wedged it may hold that too.
    consumer.restart();
    lastIdleMs.set(consumer, Date.now());
    worker
      .close()
      .catch((error: unknown) => log.warn({ err: error }, 'wedged consumer closed with an error'));
  };

  const timer = setInterval(
    () => {
      checking = checking.then(async () => {
        for (const consumer of options.consumers) {
          if (stopped) return;
          await checkOne(consumer).catch((error: unknown) => {
            // Unseen is not idle: a Redis outage longer than the bound must not restart every consumer.
            lastIdleMs.set(consumer, Date.now());
            log.debug({ err: error, queue: consumer.queue, shard: consumer.shard }, 'watchdog check failed');
          });
        }
      });
    },
    Math.max(10, Math.floor(boundMs / 4)),
  );
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
    await checking;
  };
}
