/**
 * A subscription's delivery log: list, read one with its payload and attempts, redeliver a failed
 * one, recover a time window's failed or cancelled deliveries, and the last 24 hours' counts.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { validate as isUuid } from 'uuid';
import {
  Delivery,
  DeliveryDetail,
  DeliveryListQuery,
  DeliveryStats,
  Page,
  RecoverAccepted,
  RecoverRequest,
} from '@webhooks/shared';
import type { RedisConnection } from '@webhooks/shared';
import { backlogRetryAfterSeconds, type BacklogWatch } from '../lib/backlog.js';
import { pageRequest } from '../lib/pagination.js';
import { perMinute, perWindow, spend, tooMany } from '../lib/per-minute-limit.js';
import { HttpProblem, notFound, subscriptionDisabled } from '../lib/problem.js';
import { grantedRounds, paceWindow, recoveryDelays } from '../lib/recovery-pace.js';
import { startRounds } from '../lib/redelivery.js';
import {
  DeliveryParams,
  problemResponse,
  problemResponses,
  SubscriptionParams,
} from '../lib/route-schemas.js';
import { findOwnSubscription } from '../lib/subscription-lookup.js';
import type { Views } from '../lib/views.js';

/** Rows counted past a page's start: `count` is exact up to there (docs/api.md, pagination), no further. */
const deliveryCountWindow = 10_000;

/** The window of `GET /api/webhooks/{id}/stats`, in ms (24 hours). */
const statsWindowMs = 24 * 60 * 60 * 1000;

/** Most deliveries one recover call starts; the next call continues after the last one. */
const recoverBatch = 1_000;

/** Recover calls a minute per subscription that start rounds: one a second, the default pace's window. */
const recoverCallsPerMinute = 60;

/** Options of the delivery log's routes. */
export interface DeliveryRoutesOptions {
  maxAttempts: number;
  views: Views;
  /** The backlog bound: a recover past it starts nothing (503), as a publish would. */
  backlog: Pick<BacklogWatch, 'refusal'>;
  /** The counting connection and key prefix of the recover limits. */
  redis: RedisConnection;
  keyPrefix: string;
  /** RECOVER_ROUNDS_PER_MINUTE: rounds an account's recover calls may start a minute, all its subscriptions together. */
  recoverRoundsPerMinute: number;
}

const deliveries: FastifyPluginAsyncTypebox<DeliveryRoutesOptions> = async (app, options) => {
  const redelivery = { prisma: app.prisma, queues: app.deliveryQueues, maxAttempts: options.maxAttempts };
  const recoverCalls = perMinute(options.redis, `${options.keyPrefix}:recover-calls`, recoverCallsPerMinute);
  const pace = paceWindow(options.recoverRoundsPerMinute);
  const recoverPace = perWindow(
    options.redis,
    `${options.keyPrefix}:recover-pace`,
    pace.rounds,
    pace.seconds,
  );
  const findDelivery = async (subscriptionId: string, deliveryId: string) => {
    // findUnique: batched by Prisma across concurrent requests, as in findOwnSubscription.
    const row = isUuid(deliveryId)
      ? await app.prisma.delivery.findUnique({
          where: { id: deliveryId, subscriptionId },
          include: { event: true, attempts: { orderBy: [{ attemptNumber: 'asc' }, { id: 'asc' }] } },
        })
      : null;
    if (row === null) throw notFound(`Delivery ${deliveryId}`);
    return row;
  };

  /**
   * The deliveries after `before` in the list's order (newest first by id, whose time prefix keeps
   * the read to the log's days up to it).
   * @throws HttpProblem 400 naming `before` when the subscription has no such delivery
   */
  const listedAfter = async (subscriptionId: string, before: string) => {
    const cursor = await app.prisma.delivery.findUnique({
      where: { id: before, subscriptionId },
      select: { id: true },
    });
    if (cursor === null) {
      const detail = 'names no delivery of this subscription';
      throw new HttpProblem(400, 'validation', `before ${detail}`, [{ pointer: '/before', detail }]);
    }
    return { id: { lt: before } };
  };

  app.get(
    '/api/webhooks/:id/deliveries',
    {
      schema: {
        tags: ['deliveries'],
        operationId: 'listDeliveries',
        summary: 'Deliveries of a subscription, newest first',
        params: SubscriptionParams,
        querystring: DeliveryListQuery,
        response: { 200: Page(Delivery), ...problemResponses },
      },
    },
    async (request) => {
      const page = pageRequest(
        request.query,
        'narrow the query with status, or read on with before set to the id of the last delivery seen',
      );
      const subscription = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const { status, before } = request.query;
      const where = {
        subscriptionId: subscription.id,
        ...(status === undefined ? {} : { status }),
        ...(before === undefined ? {} : await listedAfter(subscription.id, before)),
      };
      const [count, rows] = await app.prisma.$transaction([
        app.prisma.delivery.count({ where, take: page.skip + deliveryCountWindow }),
        app.prisma.delivery.findMany({
          where,
          include: { event: { select: { type: true } } },
          orderBy: { id: 'desc' },
          skip: page.skip,
          take: page.pageSize,
        }),
      ]);
      return options.views.deliveriesPage(subscription.id, request.query, page, count, rows);
    },
  );

  app.get(
    '/api/webhooks/:id/deliveries/:delivery_id',
    {
      schema: {
        tags: ['deliveries'],
        operationId: 'getDelivery',
        summary: 'One delivery with its payload and every attempt',
        params: DeliveryParams,
        response: { 200: DeliveryDetail, ...problemResponses },
      },
    },
    async (request) => {
      const subscription = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      return options.views.deliveryDetail(
        await findDelivery(subscription.id, request.params.delivery_id),
        subscription,
      );
    },
  );

  app.post(
    '/api/webhooks/:id/deliveries/:delivery_id/retry',
    {
      schema: {
        tags: ['deliveries'],
        operationId: 'retryDelivery',
        summary: 'Redeliver a failed delivery with a fresh round of attempts',
        params: DeliveryParams,
        response: {
          202: Delivery,
          409: problemResponse(
            "The delivery is not failed or cancelled, its event's data was expunged, or the subscription is disabled",
          ),
          ...problemResponses,
        },
      },
    },
    async (request, reply) => {
      const subscription = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const delivery = await findDelivery(subscription.id, request.params.delivery_id);
      if (delivery.status !== 'failed' && delivery.status !== 'cancelled') {
        throw new HttpProblem(
          409,
          'conflict',
          `Only a failed or cancelled delivery can be retried; this one is ${delivery.status}`,
        );
      }
      if (delivery.event.payloadExpungedAt !== null)
        throw new HttpProblem(
          409,
          'payload-expunged',
          "This delivery's event had its data expunged: it cannot be sent again",
        );
      if (subscription.status !== 'active') throw subscriptionDisabled();
      await startRounds(redelivery, request.accountId, [delivery], { recovered: false });
      const row = await app.prisma.delivery.findUniqueOrThrow({
        where: { id: delivery.id },
        include: { event: { select: { type: true } } },
      });
      return reply.code(202).send(options.views.delivery(row));
    },
  );

  app.get(
    '/api/webhooks/:id/stats',
    {
      schema: {
        tags: ['deliveries'],
        operationId: 'getDeliveryStats',
        summary: 'Deliveries of the last 24 hours by status, and their success rate',
        params: SubscriptionParams,
        response: { 200: DeliveryStats, ...problemResponses },
      },
    },
    async (request): Promise<DeliveryStats> => {
      const subscription = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const since = new Date(Date.now() - statsWindowMs);
      const groups = await app.prisma.delivery.groupBy({
        by: ['status'],
        where: { subscriptionId: subscription.id, createdAt: { gte: since } },
        _count: { _all: true },
      });
      const counts = { succeeded: 0, failed: 0, pending: 0, cancelled: 0 };
      for (const group of groups) counts[group.status] = group._count._all;
      const finished = counts.succeeded + counts.failed;
      return {
        since: since.toISOString(),
        ...counts,
        success_rate: finished === 0 ? null : counts.succeeded / finished,
      };
    },
  );

  app.post(
    '/api/webhooks/:id/recover',
    {
      config: { shedUnderPressure: true },
      schema: {
        tags: ['deliveries'],
        operationId: 'recoverDeliveries',
        summary: 'Send again every failed or cancelled delivery of a time window',
        description:
          'Each delivery created in [since, until) that failed or was cancelled starts a fresh round of attempts. ' +
          'Deliveries already pending are left as they are, so recovering twice sends nothing twice; those of an event whose data was expunged are left out. ' +
          `One call starts at most ${recoverBatch} rounds; when more remain, \`continue_after\` says where the next call starts. ` +
          `At most ${recoverCallsPerMinute} calls a minute per subscription, beside the account's request rate limit. ` +
          "The rounds are started at the account's pace: RECOVER_ROUNDS_PER_MINUTE, spent in windows of a second (or of two rounds, when the budget is under 120 a minute). " +
          'A call starts what is left of the current window; when the window has nothing left, it answers 429 with Retry-After until the next. ' +
          "A window's rounds are sent evenly over it, behind the live deliveries, so a recovery leaves room for them and does not flood a receiver that has just come back. " +
          'Follow `continue_after`, and wait out each 429. 503 with Retry-After past the backlog bound.',
        params: SubscriptionParams,
        body: RecoverRequest,
        response: {
          202: RecoverAccepted,
          409: problemResponse('The subscription is disabled: set its status to active first'),
          ...problemResponses,
        },
      },
    },
    async (request, reply) => {
      const subscription = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const since = new Date(request.body.since);
      const until = request.body.until === undefined ? new Date() : new Date(request.body.until);
      if (request.body.until !== undefined && until <= since) {
        throw new HttpProblem(400, 'validation', 'until must be later than since', [
          { pointer: '/until', detail: 'must be later than since' },
        ]);
      }
      if (subscription.status !== 'active') throw subscriptionDisabled();
      // The account's pace: a call takes what is left of the window and says where the next
      // continues; an empty window is 429 and does not count as a call.
      const used = await recoverPace().get(request.accountId);
      const left = pace.rounds - (used?.consumedPoints ?? 0);
      if (left <= 0) {
        throw tooMany(
          `Recovered deliveries are started at most ${pace.rounds} every ${pace.seconds} s for this account (RECOVER_ROUNDS_PER_MINUTE ${options.recoverRoundsPerMinute})`,
          used?.msBeforeNext ?? pace.seconds * 1000,
        );
      }
      // Keyed on the subscription looked up, so no spelling of its id counts apart.
      await spend(
        recoverCalls(),
        subscription.id,
        `More than ${recoverCallsPerMinute} recover calls a minute for this subscription`,
      );
      const full = await options.backlog.refusal(request.accountId);
      if (full !== null) {
        throw new HttpProblem(
          503,
          'backlog-full',
          `${full}; nothing was recovered. Retry later.`,
          undefined,
          {
            'retry-after': String(backlogRetryAfterSeconds),
          },
        );
      }
      const wanted = Math.min(recoverBatch, left);
      // Reserved before the rows are read, so concurrent calls take places of their own; what is
      // not started is given back.
      const reservation = await recoverPace()
        .consume(request.accountId, wanted)
        .catch((refusal: unknown) => {
          if (refusal instanceof RateLimiterRes) return refusal;
          throw refusal;
        });
      const take = grantedRounds(pace.rounds, reservation.consumedPoints, wanted);
      const { after } = request.body;
      const batch =
        take === 0
          ? []
          : await app.prisma.delivery.findMany({
              where: {
                subscriptionId: subscription.id,
                status: { in: ['failed', 'cancelled'] },
                createdAt: { gte: since, lt: until },
                // An expunged event's data is gone: its deliveries are never sent again.
                event: { payloadExpungedAt: null },
                ...(after === undefined ? {} : { id: { gt: after } }),
              },
              select: { id: true, eventId: true, subscriptionId: true, attemptsMade: true },
              orderBy: { id: 'asc' },
              take,
            });
      if (batch.length < wanted) {
        // A give-back that fails leaves the places taken: the window starts fewer rounds, never more.
        await recoverPace()
          .reward(request.accountId, wanted - batch.length)
          .catch(() => undefined);
      }
      if (take === 0) {
        throw tooMany(
          `Recovered deliveries are started at most ${pace.rounds} every ${pace.seconds} s for this account (RECOVER_ROUNDS_PER_MINUTE ${options.recoverRoundsPerMinute})`,
          reservation.msBeforeNext,
        );
      }
      const delaysMs = recoveryDelays(
        {
          rounds: pace.rounds,
          lengthMs: pace.seconds * 1000,
          consumed: reservation.consumedPoints - wanted + batch.length,
          msBeforeNext: reservation.msBeforeNext,
        },
        batch.length,
      );
      const paced = batch.map((candidate, i) => ({ ...candidate, delayMs: delaysMs[i]! }));
      const count = (await startRounds(redelivery, request.accountId, paced, { recovered: true })).length;
      return reply.code(202).send({
        count,
        until: until.toISOString(),
        continue_after: batch.length < take ? null : batch[batch.length - 1]!.id,
      });
    },
  );
};

export default fp(deliveries, { name: 'delivery-routes', encapsulate: true });
