/**
 * Fair scheduling of first deliveries across accounts: they wait per account in Redis and are admitted
 * by deficit round robin with quotas, keeping the queue near DELIVERY_QUEUE_TARGET; a quiet account
 * goes at once, in the front lane. An entry leaves once its job exists or its attempt ended, or is
 * re-admitted when its lease ends. Scripts: `admission-script.ts`; admissions go to `dispatcher.ts`.
 */
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import {
  accountSchedulerKeys,
  createAdmissionScript,
  entryValue,
  lanes,
  readEntry,
  type AdmissionScript,
  type ScheduledEntry,
  type SchedulerKeys,
} from './admission-script.js';
import type { AdmissionDispatcher, AdmittedDelivery, ScheduledDelivery } from './dispatcher.js';
import {
  deliveryJobId,
  layoutOf,
  type AccountOverride,
  type DeliveryJobData,
  type RedisConnection,
} from '@webhooks/shared';

export interface AccountSchedulerOptions<D extends ScheduledDelivery = ScheduledDelivery> {
  /** A producer connection (never a blocking one). */
  redis: RedisConnection;
  /** The effective queue key prefix (QUEUE_PREFIX, hash-tagged on a Cluster). */
  prefix: string;
  /** The `deliveries` queue the scheduler admits into. */
  deliveries: Queue<DeliveryJobData>;
  /** What becomes of what it admits: inline attempts or jobs on `deliveries`. */
  dispatcher: AdmissionDispatcher<D>;
  /** DELIVERY_QUEUE_TARGET: most jobs waiting in the `deliveries` queue after an admission. */
  queueTarget: number;
  /** Deliveries an account of weight 1 is admitted per turn. */
  quantum: number;
  /** How long an admitted entry may wait for its BullMQ job before it is admitted again, in ms. */
  leaseMs: number;
  /** How often a process admits while accounts still have work waiting, in ms. */
  busyIntervalMs: number;
  /** How often a process admits when idle (work scheduled by another process, expired leases), in ms. */
  idleIntervalMs: number;
  /** ACCOUNT_DELIVERIES_PER_SECOND: the default quota of deliveries admitted a second per account. */
  deliveriesPerSecond: number;
  /** ACCOUNT_OVERRIDES (weight, deliveries a second), written to Redis at start. */
  overrides: ReadonlyMap<string, AccountOverride>;
  log: Logger;
}

export interface AccountScheduler<D extends ScheduledDelivery = ScheduledDelivery> {
  /**
   * Adds deliveries to their accounts' lists (once per job id) and admits what the queue has room for;
   * front-lane admissions with new rows go to the dispatcher as the call's own (maybe inline).
   * @throws ioredis' or BullMQ's errors when Redis cannot be reached (the caller retries; nothing doubles)
   */
  schedule(deliveries: readonly D[]): Promise<void>;
  /**
   * Admits once, up to the queue's room in fair order, adding their jobs.
   * @returns how many were admitted, and whether accounts still wait
   * @throws ioredis' or BullMQ's errors when Redis cannot be reached
   */
  admit(): Promise<{ admitted: number; backlog: boolean }>;
  /** Accounts waiting for their turn, and deliveries held (waiting or being admitted). @throws ioredis' errors */
  backlog(): Promise<{ accounts: number; deliveries: number }>;
  /** Keys and default quota, for the turn a job the scheduler did not admit takes in the gate's admission. */
  readonly turns: { keys: SchedulerKeys; deliveriesPerSecond: number };
  /** Of `deliveries`, which the scheduler still holds (waiting or being admitted). */
  holds(deliveries: ReadonlyArray<{ eventId: string; subscriptionId: string }>): Promise<boolean[]>;
  /** Writes the account weights and admits in the background; resolves once written (or failed, logged). */
  start(): Promise<void>;
  /** Stops the background admissions and waits for one in progress, and for inline attempts still running. */
  close(): Promise<void>;
}

/** Most entries one schedule call sends to Redis (a bound on one script's run time). */
const scheduleChunk = 1_000;

/** Creates the scheduler on `options.redis` (registering its scripts there). */
export function createAccountScheduler<D extends ScheduledDelivery>(
  options: AccountSchedulerOptions<D>,
): AccountScheduler<D> {
  const { redis, deliveries, dispatcher, log } = options;
  const keys = accountSchedulerKeys(options.prefix);
  const script = createAdmissionScript(redis, keys, {
    queueKeys: layoutOf(deliveries),
    queueTarget: options.queueTarget,
    quantum: options.quantum,
    leaseMs: options.leaseMs,
    deliveriesPerSecond: options.deliveriesPerSecond,
  });

  let running: Promise<void> | null = null;
  let again = false;
  /** The last admission left accounts with work waiting. */
  let backlogged = false;
  let failing = false;
  let closed = true;
  let timer: NodeJS.Timeout | undefined;
  /** Aborts what start() waits for (the connection, the next try of the overrides) at close. */
  let stopping = new AbortController();

  /** After attempts ended: admits again at once when accounts wait and their slots make it worth it. */
  const kickForFreedSlots = () => {
    if (backlogged && dispatcher.worthAdmitting()) kick();
  };
  dispatcher.connect({ confirm: (jobIds) => script.confirm(jobIds), slotsFreed: kickForFreedSlots });

  /** One script call: schedules `list`, admits what the dispatcher has room for, and hands it over. */
  const scheduleAndAdmit = async (list: readonly D[]) => {
    const scheduled: ScheduledEntry[] = [];
    /** This call's own deliveries whose rows are new, by job id. */
    const fresh = new Map<string, D>();
    for (const d of list) {
      const jobId = deliveryJobId(d.eventId, d.subscriptionId);
      scheduled.push({ jobId, accountId: d.accountId, entry: entryValue(d) });
      if (d.created === true) fresh.set(jobId, d);
    }
    const room = dispatcher.reserve();
    let admission: Awaited<ReturnType<AdmissionScript['admit']>>;
    try {
      admission = await script.admit(scheduled, room.limit);
    } finally {
      // Released in the turn the dispatch starts its attempts: no other admission runs in between.
      room.release();
    }
    const { admitted, waitingAccounts } = admission;
    await dispatcher.dispatch(
      admitted.map(({ jobId, entry, lane }): AdmittedDelivery<D> => {
        const { accountId, requestId, created, held } = readEntry(entry);
        const own = lane === lanes.front ? fresh.get(jobId) : undefined;
        return {
          jobId,
          accountId,
          lane,
          created,
          held,
          ...(requestId === undefined ? {} : { requestId }),
          ...(own === undefined ? {} : { own }),
        };
      }),
    );
    return { admitted: admitted.length, backlog: waitingAccounts > 0 };
  };
  const admit = () => scheduleAndAdmit([]);

  /** Admits until nothing more is asked, then plans the next admission. */
  const pump = async () => {
    let backlog = false;
    do {
      again = false;
      try {
        backlog = (await admit()).backlog;
        if (failing) log.info('admission of scheduled deliveries works again');
        failing = false;
      } catch (error) {
        // Once per outage at warn: the next tries come every idle interval until Redis is back.
        if (!failing)
          log.warn({ err: error }, 'admission of scheduled deliveries failed; tried again shortly');
        failing = true;
        break;
      }
    } while (again && !closed);
    if (closed) return;
    backlogged = backlog && !failing;
    clearTimeout(timer);
    // Short of room, it waits for attempts to end rather than polling: a small admission costs a whole call.
    timer = setTimeout(
      kick,
      backlogged && dispatcher.worthAdmitting() ? options.busyIntervalMs : options.idleIntervalMs,
    );
  };

  const kick = () => {
    if (closed) return;
    if (running !== null) {
      again = true;
      return;
    }
    running = pump().finally(() => {
      running = null;
    });
  };

  return {
    async schedule(list) {
      // In the same call: a quiet account's delivery is queued one script call after its fan-out.
      let backlog = false;
      for (let i = 0; i < list.length; i += scheduleChunk)
        backlog = (await scheduleAndAdmit(list.slice(i, i + scheduleChunk))).backlog || backlog;
      if (backlog) kick();
    },
    admit,
    turns: { keys, deliveriesPerSecond: options.deliveriesPerSecond },
    async backlog() {
      const [accounts, deliveries] = await Promise.all([redis.llen(keys.ring), redis.hlen(keys.entries)]);
      return { accounts, deliveries };
    },
    async holds(list) {
      if (list.length === 0) return [];
      const pipeline = redis.pipeline();
      for (const d of list) pipeline.hexists(keys.entries, deliveryJobId(d.eventId, d.subscriptionId));
      const answers = (await pipeline.exec()) ?? [];
      return answers.map(([error, value]) => {
        if (error) throw error;
        return value === 1;
      });
    },
    async start() {
      closed = false;
      stopping = new AbortController();
      const { signal } = stopping;
      try {
        // The producer connection refuses commands until up: wait (`once` also ends on 'error').
        while (redis.status !== 'ready')
          await once(redis, 'ready', { signal }).catch(() => signal.throwIfAborted());
        kick();
        // Replaced whole, so earlier overrides' weights do not linger and removed accounts get the defaults.
        for (let warned = false; ; warned = true) {
          const write = redis.multi().del(keys.weight, keys.quota);
          for (const [account, { weight, deliveries_per_second }] of options.overrides) {
            if (weight !== undefined) write.hset(keys.weight, account, weight);
            if (deliveries_per_second !== undefined) write.hset(keys.quota, account, deliveries_per_second);
          }
          try {
            await write.exec();
            return;
          } catch (error) {
            if (!warned) log.warn({ err: error }, 'account overrides not written to Redis yet; trying again');
            await sleep(options.idleIntervalMs, undefined, { signal });
          }
        }
      } catch (error) {
        if (!signal.aborted) throw error;
      }
    },
    async close() {
      closed = true;
      stopping.abort();
      clearTimeout(timer);
      await Promise.all([running, dispatcher.close()]);
    },
  };
}
