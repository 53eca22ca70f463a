/**
 * Fair scheduling of first deliveries across accounts. The fan-out does not put its deliveries on
 * the shared `deliveries` queue itself: it hands them to this scheduler, which keeps them waiting
 * per account in Redis and admits them into BullMQ by deficit round robin over the accounts that
 * have work waiting, keeping the queue no longer than the workers start soon
 * (DELIVERY_QUEUE_TARGET). An account's flood therefore waits in its own list, and another
 * account's first delivery is admitted at once into the queue's front lane, which workers take
 * before the backlogged accounts' jobs.
 *
 * Redis layout (`admission-script.ts` holds the keys and the scripts), all under the queue prefix
 * (one hash slot on a Cluster):
 * - `sched:q:<account>`: list of the account's waiting delivery job ids, oldest first;
 * - `sched:ring`: list of the accounts with a non-empty list, in round-robin order;
 * - `sched:entries`: hash of every delivery held here, job id → `<account>\t<request id>`, behind
 *   {@link inlineMark} when the delivery may be attempted inline; it makes scheduling idempotent
 *   and tells the reconciler that a delivery is not lost;
 * - `sched:admitting`: sorted set of the job ids admitted and not yet confirmed in BullMQ, scored by
 *   when their lease ends (ms);
 * - `sched:deficit`: hash account → deficit carried to its next turn (deliveries);
 * - `sched:weight`: hash account → weight (ACCOUNT_OVERRIDES; 1 when absent);
 * - `sched:quota`: hash account → deliveries a second (ACCOUNT_OVERRIDES; the default when absent);
 * - `sched:bucket:<account>`: `<tokens>:<ms>`, the account's token bucket for that quota (a
 *   second's worth of burst), expiring when it would be full again. An account out of tokens is
 *   passed over: its deliveries wait, never refused, and no attempt is used.
 *
 * Crash safety: an entry leaves `sched:entries` only after its BullMQ job exists. A scheduler that
 * dies between admitting and adding leaves the entry in `sched:admitting`; when its lease ends the
 * next admission takes it again. Adding a job id BullMQ still holds is a no-op, and a job whose
 * delivery is no longer pending ends as `not_pending`, so a re-admission never sends twice.
 * Retries, parked jobs and manual retry rounds stay BullMQ's and do not pass through here.
 *
 * Inline first attempts (`delivery/inline.ts`): a delivery of the caller's own list that is
 * admitted at once into the front lane is attempted by the caller, which waits for it up to the
 * inline deadline, instead of getting a job. Every other delivery admitted while the process runs
 * the attempts (`start(inline)`) is attempted there too, in the background, in the order the
 * round robin admitted it: a first attempt that confirms costs no BullMQ job, whichever account's
 * turn admitted it. That admission takes no more than the attempts have room for, less the slots
 * kept for quiet accounts' own fan-outs (`admission-room.ts`), and the rest waits its turn here.
 * Either way the entry is confirmed when the attempt ends (with the follow-up job, if any, added
 * first), so a process that dies mid-attempt leaves it leased, and it is admitted again as a job.
 * Unconfirmed entries count against DELIVERY_QUEUE_TARGET like queued jobs, so the attempts in
 * flight and the jobs waiting together stay within it. Only a delivery whose row its fan-out
 * created is ever attempted inline: one scheduled again by a fan-out run again, or admitted again
 * after its lease, may have its job already, and gets a job under the same id (a no-op when it
 * exists).
 */
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { context, ROOT_CONTEXT } from '@opentelemetry/api';
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import {
  candidateJob,
  type FollowUp,
  type InlineAttempts,
  type InlineCandidate,
  type InlineRun,
} from '../delivery/inline.js';
import { backgroundRoom, worthAdmitting } from './admission-room.js';
import {
  candidateOf,
  candidateOfJob,
  entryValue,
  withLoaded,
  type ScheduledDelivery,
} from './scheduled-delivery.js';
import {
  accountSchedulerKeys,
  createAdmissionScript,
  inlineMark,
  lanes,
  type AdmissionScript,
  type ScheduledEntry,
} from './admission-script.js';
import {
  batcher,
  deliveryJobId,
  layoutOf,
  type AccountOverride,
  type DeliveryJobData,
  type RedisConnection,
} from '@webhooks/shared';

/** Options of {@link createAccountScheduler}. */
export interface AccountSchedulerOptions {
  /**
   * ACCOUNT_SCHEDULER. When false, deliveries go straight onto the `deliveries` queue in arrival
   * order, as they did before accounts were scheduled: only to measure the scheduler's cost, or
   * for a single-tenant deployment.
   */
  enabled: boolean;
  /** A producer connection (never a blocking one). */
  redis: RedisConnection;
  /** The effective queue key prefix (QUEUE_PREFIX, hash-tagged on a Cluster). */
  prefix: string;
  /** The `deliveries` queue the scheduler admits into. */
  deliveries: Queue<DeliveryJobData>;
  /** DELIVERY_MAX_ATTEMPTS, for the jobs it adds. */
  maxAttempts: number;
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

/** The scheduler's operations. */
export interface AccountScheduler {
  /**
   * Adds deliveries to their accounts' lists, once per delivery job id however often it is called,
   * and admits what the queue has room for in the same script call; the background admission
   * takes over while accounts still have work waiting.
   *
   * With `inline`, those of `deliveries` admitted at once into the front lane are attempted inline
   * (up to its deadline) instead of getting a job.
   *
   * @throws ioredis' or BullMQ's errors when Redis cannot be reached (nothing is lost: the caller
   *   retries, and an entry already held is not scheduled twice)
   */
  schedule(deliveries: readonly ScheduledDelivery[], inline?: InlineAttempts): Promise<void>;
  /**
   * Admits once: takes up to the queue's room in fair order and adds their BullMQ jobs.
   *
   * @returns how many were admitted, and whether accounts still have work waiting
   * @throws ioredis' or BullMQ's errors when Redis cannot be reached
   */
  admit(): Promise<{ admitted: number; backlog: boolean }>;
  /**
   * How many accounts have deliveries waiting for their turn, and how many deliveries the
   * scheduler holds (waiting or being admitted).
   *
   * @throws ioredis' errors when Redis cannot be reached
   */
  backlog(): Promise<{ accounts: number; deliveries: number }>;
  /** Of `deliveries`, which the scheduler still holds (waiting or being admitted). */
  holds(deliveries: ReadonlyArray<{ eventId: string; subscriptionId: string }>): Promise<boolean[]>;
  /**
   * Writes the account weights to Redis and starts admitting in the background: at once, then at
   * the intervals of the options. With `inline` (a process that runs the attempts of this shard),
   * what an admission takes is attempted here rather than queued, as far as `inline` has room.
   * Resolves once the weights are written (or the write failed, which is logged: the accounts then
   * keep the weights Redis had).
   */
  start(inline?: InlineAttempts): Promise<void>;
  /** Stops the background admissions and waits for one in progress, and for inline attempts still running. */
  close(): Promise<void>;
}

/** Most entries one schedule call sends to Redis (a bound on one script's run time). */
const scheduleChunk = 1_000;

/** Creates the scheduler on `options.redis` (registering its scripts there). */
export function createAccountScheduler(options: AccountSchedulerOptions): AccountScheduler {
  const { redis, deliveries, log } = options;
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

  /** Inline attempts that outlived their fan-out's deadline, until their follow-up is done. */
  const late = new Set<Promise<void>>();

  /**
   * Adds the jobs of `ended` (admitted deliveries, and attempts' follow-ups), then with `confirm`
   * releases their entries: one `addBulk` and one script call.
   */
  const settle = async (ended: readonly FollowUp[], confirm: boolean) => {
    const jobs = ended.flatMap(({ job }) => (job === null ? [] : [job]));
    // Outside the caller's context: a job that carries no trace context of its own (one admitted
    // later, from Redis) must not join the trace of whichever event's fan-out settles it.
    if (jobs.length > 0) await context.with(ROOT_CONTEXT, () => deliveries.addBulk(jobs));
    if (confirm) await script.confirm(ended.map(({ jobId }) => jobId));
  };
  /** {@link settle} for attempts that end one by one: those ending together are settled together. */
  const settleBatch = (confirm: boolean) =>
    batcher<FollowUp, void>(async (ended) => {
      await settle(ended, confirm);
      return ended.map(() => undefined);
    });
  const settleLate = { confirmed: settleBatch(true), unconfirmed: settleBatch(false) };

  /**
   * As each of `pending` (inline attempts past their deadline) ends: adds its follow-up job, then
   * with `confirm` releases its entry. One that fails here stays leased (or, without the
   * scheduler, pending in PostgreSQL) and is found again; it is logged, never thrown.
   */
  const followLate = (pending: ReadonlyArray<Promise<FollowUp>>, confirm: boolean) => {
    for (const attempt of pending) {
      const done: Promise<void> = attempt
        .then(async (ended) => {
          await (confirm ? settleLate.confirmed : settleLate.unconfirmed)(ended);
          kickForFreedSlots();
        })
        .catch((error: unknown) =>
          log.warn({ err: error }, 'follow-up of a late inline attempt not stored; it is found again later'),
        )
        .finally(() => late.delete(done));
      late.add(done);
    }
  };

  /** The attempts of the background admission, once `start` has them. */
  let background: InlineAttempts | undefined;
  /**
   * Slots promised to admissions whose script call is under way. A fan-out's admission and the
   * background one can overlap; each would otherwise count the same free slots, and together admit
   * more than the attempts can start, taking the slots kept for quiet accounts.
   */
  let promised = 0;
  /** The free inline slots no admission under way has promised yet. */
  const unpromisedRoom = (attempts: InlineAttempts) => Math.max(0, attempts.room() - promised);

  /** Whether the background admission is worth a script call now (always when it admits jobs). */
  const roomToAdmit = () =>
    background === undefined || worthAdmitting(unpromisedRoom(background), background.capacity);
  /**
   * Most deliveries an admission may take: a process that attempts what it admits takes no more
   * than it can start now, less the slots kept for quiet accounts, so the rest waits in its
   * account's list for the next admission (its own, or another process's) rather than becoming
   * delivery jobs.
   */
  const admissionLimit = () =>
    background === undefined
      ? options.queueTarget
      : backgroundRoom(unpromisedRoom(background), background.capacity);
  /** After attempts ended: admits again at once when accounts wait and their slots make it worth it. */
  const kickForFreedSlots = () => {
    if (backlogged && roomToAdmit()) kick();
  };

  /**
   * One script call: schedules `list` (may be empty), then admits. The caller's own new deliveries
   * admitted into the front lane are attempted with `inline`, waited for up to its deadline; the
   * other new deliveries admitted with the background attempts, not waited for; the rest, and those
   * neither attempts, get their jobs.
   */
  const scheduleAndAdmit = async (list: readonly ScheduledDelivery[], inline?: InlineAttempts) => {
    const scheduled: ScheduledEntry[] = [];
    /** This call's own deliveries whose rows are new, which the caller may attempt, by job id. */
    const fresh = new Map<string, ScheduledDelivery>();
    for (const d of list) {
      const jobId = deliveryJobId(d.eventId, d.subscriptionId);
      scheduled.push({ jobId, accountId: d.accountId, entry: entryValue(d) });
      if (inline !== undefined && d.created === true) fresh.set(jobId, d);
    }
    const limit = admissionLimit();
    if (background !== undefined) promised += limit;
    let admission: Awaited<ReturnType<AdmissionScript['admit']>>;
    try {
      admission = await script.admit(scheduled, limit);
    } finally {
      // Released in the same turn of the event loop as the attempts below start and take their
      // slots: no other admission runs in between.
      if (background !== undefined) promised -= limit;
    }
    const { admitted, waitingAccounts } = admission;
    const ended: FollowUp[] = [];
    const candidates: InlineCandidate[] = [];
    const others: InlineCandidate[] = [];
    for (const { jobId, entry: value, lane } of admitted) {
      const requestId = value.slice(value.indexOf('\t') + 1);
      // The stale lane is the back lane too.
      const candidate = candidateOfJob(jobId, requestId, lane !== lanes.front);
      const own = lane === lanes.front ? fresh.get(jobId) : undefined;
      if (own !== undefined) candidates.push(withLoaded(candidate, own));
      else if (background !== undefined && lane !== lanes.stale && value.startsWith(inlineMark))
        others.push(candidate);
      else ended.push({ jobId, job: candidateJob(candidate, options.maxAttempts) });
    }
    const none: InlineRun = { settled: [], late: [] };
    // Started first, so that they run while the caller's own attempts are waited for.
    const aside = others.length === 0 ? none : background!.start(others);
    // Followed before anything here can throw: an attempt under way is settled when it ends, and
    // close() waits for it, whatever becomes of this call.
    followLate(aside.late, true);
    const mine = candidates.length === 0 ? none : inline!.start(candidates);
    const waiting = mine.late.length === 0 ? Promise.resolve(none) : inline!.wait(mine.late);
    let ran = none;
    try {
      // What is not attempted here gets its job now, not after the caller's own attempts: behind a
      // busy worker's attempts, a quiet account's delivery would otherwise wait for them.
      await settle([...ended, ...aside.settled, ...mine.settled], true);
    } finally {
      ran = await waiting;
      followLate(ran.late, true);
    }
    await settle(ran.settled, true);
    // The caller's attempts that ended within the deadline freed slots too.
    if (ran.settled.length > 0) kickForFreedSlots();
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
    // With its attempts' room short, the process waits for attempts to end (followLate kicks)
    // rather than polling: an admission of a few deliveries costs nearly a whole script call.
    timer = setTimeout(kick, backlogged && roomToAdmit() ? options.busyIntervalMs : options.idleIntervalMs);
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

  const addDirectly = async (list: readonly ScheduledDelivery[], inline?: InlineAttempts) => {
    for (let i = 0; i < list.length; i += scheduleChunk) {
      const chunk = list.slice(i, i + scheduleChunk);
      const attempted = (d: ScheduledDelivery) => inline !== undefined && d.created === true;
      const candidates = chunk.filter(attempted).map((d) => withLoaded(candidateOf(d), d));
      const ran = candidates.length === 0 ? { settled: [], late: [] } : await inline!.attempt(candidates);
      const queued = chunk
        .filter((d) => !attempted(d))
        .map(candidateOf)
        .map((candidate) => ({ jobId: candidate.jobId, job: candidateJob(candidate, options.maxAttempts) }));
      followLate(ran.late, false);
      await settle([...queued, ...ran.settled], false);
    }
  };

  return {
    async schedule(list, inline) {
      if (!options.enabled) return addDirectly(list, inline);
      // Admitted in the same call, not behind the background admission: a quiet account's
      // delivery reaches the queue one script call after its fan-out.
      let backlog = false;
      for (let i = 0; i < list.length; i += scheduleChunk)
        backlog = (await scheduleAndAdmit(list.slice(i, i + scheduleChunk), inline)).backlog || backlog;
      if (backlog) kick();
    },
    admit,
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
    async start(inline) {
      if (!options.enabled) return;
      background = inline;
      closed = false;
      stopping = new AbortController();
      const { signal } = stopping;
      try {
        // The producer connection refuses commands until it is up: wait rather than fail the
        // first admission and the overrides at every start. `once` also ends on the connection's
        // 'error' events, each a failed try to connect.
        while (redis.status !== 'ready')
          await once(redis, 'ready', { signal }).catch(() => signal.throwIfAborted());
        kick();
        // Until written: weights and quotas left from an earlier ACCOUNT_OVERRIDES would otherwise
        // stay in force. Replaced whole, so that an account taken out goes back to the defaults.
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
      await Promise.all([running, ...late]);
    },
  };
}
