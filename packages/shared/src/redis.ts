/**
 * Redis connections as BullMQ's "going to production" guide asks: workers retry commands forever
 * (`maxRetriesPerRequest: null`) so a Redis restart pauses them instead of killing them; producers
 * fail fast (`enableOfflineQueue: false`) so a caller learns at once that an event was not accepted.
 */
import { Redis } from 'ioredis';

/** A connection for BullMQ workers and queue events: commands wait for Redis to come back. */
export function createWorkerConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null });
}

/**
 * A connection for producers (the publisher, the API): commands fail at once while Redis is away.
 *
 * Without auto-pipelining: with it, ioredis 5 throws an uncaught `TypeError: results[i] is not
 * iterable` when a script command (`defineCommand`, which the rate limiter and the delivery gate
 * use) is sent before the connection is ready with the offline queue off (redis/ioredis#1931,
 * #1511), and that would crash the process. Batching of concurrent publishes (`addBulk`) and
 * explicit pipelines keep most of what it saved (bench/README.md).
 */
export function createProducerConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
}
