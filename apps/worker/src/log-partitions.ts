/**
 * Which days of the delivery log exist. `events`, `deliveries` and `delivery_attempts` are
 * range-partitioned by the UTC day of their UUIDv7 ids (migration `partitioned_delivery_log`);
 * the maintenance job creates {@link partitionDaysAhead} days ahead and retention drops the days
 * before its cutoff. A partition's DDL locks its parent for an instant, so each statement gives up
 * after {@link ddlLockTimeoutMs} and is tried at the next run; each table's partition is created in
 * a statement of its own, so that the DDL never holds one parent while it waits for another (the
 * record of attempts locks them in another order, and the two deadlocked). Raw statements, never a Prisma batch,
 * whose query compiler's loading raced the test runner's.
 */
import type { PrismaClient } from '@webhooks/db';

/** Days created ahead of today (UTC): the maintenance job may be down this long without rows reaching the default partition. */
export const partitionDaysAhead = 7;

/** How long a partition's CREATE or DROP waits for its lock, in ms. */
export const ddlLockTimeoutMs = 1_000;

const dayMs = 86_400_000;

/** The partitioned tables, parents before children (a day's events, then its deliveries, then their attempts). */
const logTables = ['events', 'deliveries', 'delivery_attempts'] as const;

/** The UTC day of `at`, as `YYYY-MM-DD`. */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** Today (UTC, from `now`) and the `ahead` days after it, as `YYYY-MM-DD`, oldest first. */
export function daysToCreate(now: Date, ahead = partitionDaysAhead): string[] {
  return Array.from({ length: ahead + 1 }, (_, i) => utcDay(new Date(now.getTime() + i * dayMs)));
}

/**
 * The days (`YYYY-MM-DD`, UTC) whose every row is older than `cutoff`: those that ended at or
 * before it. A row is thus kept at least the retention period, and at most one day longer.
 */
export function expiredDays(days: readonly string[], cutoff: Date): string[] {
  return days.filter((day) => Date.parse(`${day}T00:00:00.000Z`) + dayMs <= cutoff.getTime());
}

/** What {@link createLogPartitions} did, by day. */
export interface PartitionCreation {
  created: string[];
  /**
   * Days not created this time, with why: a lock not granted in time, or rows of that day already
   * in the default partition.
   */
  failed: { day: string; reason: string }[];
}

/**
 * Creates the partitions of today and the days ahead where missing. Never throws for one day: a
 * day that fails is reported and tried at the next run, its rows meanwhile in the default
 * partition (kept, and deleted by retention row by row).
 */
export async function createLogPartitions(
  prisma: PrismaClient,
  now = new Date(),
): Promise<PartitionCreation> {
  const result: PartitionCreation = { created: [], failed: [] };
  for (const day of daysToCreate(now)) {
    let created = false;
    try {
      for (const table of logTables) {
        const rows = await prisma.$queryRaw<{ created: boolean }[]>`
          SELECT create_log_partition(${table}, ${day}::date, ${ddlLockTimeoutMs}::int) AS created`;
        created ||= rows[0]?.created === true;
      }
      if (created) result.created.push(day);
    } catch (error) {
      result.failed.push({ day, reason: error instanceof Error ? error.message : String(error) });
    }
  }
  return result;
}

/** The days that have partitions, oldest first, as `YYYY-MM-DD`. */
export async function logPartitionDays(prisma: PrismaClient): Promise<string[]> {
  const rows = await prisma.$queryRaw<{ day: string }[]>`SELECT day::text FROM log_partition_days() AS day`;
  return rows.map((row) => row.day);
}

/**
 * Drops the partitions of every day that ended before `cutoff`, oldest first, and returns those
 * days. A delivery and its attempts live in their event's day, so none outlives its event.
 *
 * @throws the database's error (such as lock_not_available) for the day it stopped at; the days
 *   before it are dropped.
 */
export async function dropExpiredLogPartitions(prisma: PrismaClient, cutoff: Date): Promise<string[]> {
  const dropped: string[] = [];
  for (const day of expiredDays(await logPartitionDays(prisma), cutoff)) {
    await prisma.$executeRaw`SELECT drop_log_partitions(${day}::date, ${ddlLockTimeoutMs}::int)`;
    dropped.push(day);
  }
  return dropped;
}
