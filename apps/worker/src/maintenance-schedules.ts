/**
 * The maintenance job schedulers (reconciler, retention), kept in Redis by every worker: set at
 * start, checked every `checkMs` and on reconnection, set anew when missing or overdue. A Redis that
 * came back empty lost them, and with them the reconciler that rebuilds from PostgreSQL.
 */
import type { Queue } from 'bullmq';
import type { Logger } from 'pino';
import type { Counter } from 'prom-client';
import type { MaintenanceJobData } from '@webhooks/shared';

/** One schedule: a maintenance task and its period, in ms. */
export interface MaintenanceSchedule {
  task: MaintenanceJobData['task'];
  every: number;
}

/** The schedules kept. */
export interface KeptSchedules {
  /** The tasks the last check found missing or stuck (empty once set again). */
  missing(): readonly string[];
  /** Checks now (as at every `checkMs`); never throws. */
  check(): Promise<void>;
  stop(): void;
}

export interface KeepSchedulesDeps {
  queue: Pick<Queue<MaintenanceJobData>, 'getJobScheduler' | 'upsertJobScheduler'>;
  /** The queue's connection: its `ready` event (a reconnection) triggers a check. */
  connection: {
    on(event: 'ready', listener: () => void): unknown;
    off(event: 'ready', listener: () => void): unknown;
  };
  schedules: readonly MaintenanceSchedule[];
  /** How often to check, in ms. */
  checkMs: number;
  /** The finished jobs' retention, as for every job. */
  retention: { completed: number | { age: number }; failed: number | { age: number } };
  log: Logger;
  /** Counts each schedule set again after it went missing, by task. */
  restored: Counter<'task'>;
}

/** Whether a schedule must be set: `next` (ms) missing, or overdue by a period and an interval (its job lost). */
export function scheduleNeedsSetting(
  found: { next?: number } | undefined,
  every: number,
  checkMs: number,
  now: number,
): boolean {
  if (found === undefined) return true;
  return found.next === undefined || found.next < now - every - checkMs;
}

/** Sets every schedule now, and keeps them set. */
export function keepMaintenanceScheduled(deps: KeepSchedulesDeps): KeptSchedules {
  const { queue, schedules, checkMs, log } = deps;
  let missing: string[] = [];
  let started = false;
  const set = (schedule: MaintenanceSchedule) =>
    queue.upsertJobScheduler(
      schedule.task,
      { every: schedule.every },
      {
        name: schedule.task,
        data: { task: schedule.task },
        opts: { removeOnComplete: deps.retention.completed, removeOnFail: deps.retention.failed },
      },
    );
  let checking: Promise<void> | null = null;
  const checkOnce = async () => {
    const found: string[] = [];
    for (const schedule of schedules) {
      const scheduler = await queue.getJobScheduler(schedule.task);
      if (scheduleNeedsSetting(scheduler, schedule.every, checkMs, Date.now())) found.push(schedule.task);
    }
    missing = found;
    for (const task of found) {
      await set(schedules.find((schedule) => schedule.task === task)!);
      if (started) {
        deps.restored.inc({ task });
        log.warn({ task }, 'maintenance schedule was missing from Redis; set again');
      }
    }
    missing = [];
    started = true;
  };
  const check = () => {
    checking ??= checkOnce()
      .catch((error: unknown) =>
        log.warn({ err: error }, 'maintenance schedules not checked; next check soon'),
      )
      .finally(() => {
        checking = null;
      });
    return checking;
  };
  const onReady = () => void check();
  deps.connection.on('ready', onReady);
  const timer = setInterval(onReady, checkMs);
  timer.unref();
  void check();
  return {
    missing: () => missing,
    check,
    stop() {
      clearInterval(timer);
      deps.connection.off('ready', onReady);
    },
  };
}
