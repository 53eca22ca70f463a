/**
 * What the API's plugins add to Fastify's types (`app.prisma`, `app.redis`, `app.publisher`, queues,
 * `request.accountId`), in one module index.ts re-exports, for code building on the app.
 */
import type { Queue } from 'bullmq';
import type { Registry } from 'prom-client';
import type { PrismaClient } from '@webhooks/db';
import type {
  DeliveryQueues,
  EventPublisher,
  RedisConnection,
  ReplicaWatch,
  VerificationJobData,
} from '@webhooks/shared';

declare module 'fastify' {
  interface FastifyInstance {
    prisma: PrismaClient;
    /** The app's Prometheus registry (plugins/external/metrics.ts). */
    metrics: Registry;
    /** Where `/metrics` and the queue dashboard are served: the app, or the ADMIN_PORT listener. */
    operator: FastifyInstance;
    redis: RedisConnection;
    publisher: EventPublisher;
    /** The `deliveries` queue of each queue shard (QUEUE_SHARDS). */
    deliveryQueues: DeliveryQueues;
    /** Callback challenges (CALLBACK_VERIFICATION=challenge). */
    verificationQueue: Queue<VerificationJobData>;
    /** Which shards' masters lack REDIS_WAIT_REPLICAS replicas; null when it is 0. */
    replicaWatch: ReplicaWatch | null;
  }
  interface FastifyRequest {
    /** The authenticated account (the token's `sub`); set on every route of the account scope (account-scope.ts). */
    accountId: string;
  }
}
