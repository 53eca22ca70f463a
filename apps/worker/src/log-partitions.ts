/**
 * The delivery log's days: `events`, `deliveries` and `delivery_attempts` are range-partitioned by their
 * UUIDv7 ids' UTC day; maintenance creates {@link partitionDaysAhead} days ahead, retention drops old
 * ones. Each DDL statement waits at most {@link ddlLockTimeoutMs} and locks one parent only (the attempt
 * record locks them in another order). Raw statements, no Prisma batch.
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

/** The days (`YYYY-MM-DD`, UTC) that ended at or before `cutoff`: rows are kept the retention, at most a day more. */
export function expiredDays(days: readonly string[], cutoff: Date): string[] {
  return days.filter((day) => Date.parse(`${day}T00:00:00.000Z`) + dayMs <= cutoff.getTime());
}

/** What {@link createLogPartitions} did, by day. */
export interface PartitionCreation {
  created: string[];
  /** Days not created, with why: a lock not granted in time, or that day's rows already in the default partition. */
  failed: { day: string; reason: string }[];
}

/** Creates today's and the coming days' partitions; a failed day is reported, retried, its rows in the default. */
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
 * Drops the days that ended before `cutoff`, oldest first, and returns them (a delivery lives in its event's day).
 * @throws the database's error (such as lock_not_available) for the day it stopped at; earlier days are dropped
 */
export async function dropExpiredLogPartitions(prisma: PrismaClient, cutoff: Date): Promise<string[]> {
  const dropped: string[] = [];
  for (const day of expiredDays(await logPartitionDays(prisma), cutoff)) {
    await prisma.$executeRaw`SELECT drop_log_partitions(${day}::date, ${ddlLockTimeoutMs}::int)`;
    dropped.push(day);
  }
  return dropped;
}
