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
 * Commands issued in the same tick share one socket write (auto-pipelining): under load the API
 * otherwise spends more CPU writing to the Redis socket than on anything else (bench/README.md).
 */
export function createProducerConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: 1, enableOfflineQueue: false, enableAutoPipelining: true });
}
