/**
 * The delivery log of a subscription (issue #4): list its deliveries, read one with its payload
 * and every attempt, and redeliver a failed one with a fresh round of attempts.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { validate as isUuid } from 'uuid';
import {
  Delivery,
  DeliveryDetail,
  DeliveryListQuery,
  deliveryJobId,
  deliveryJobOptions,
  Page,
  Problem,
} from '@webhooks/shared';
import { pageEnvelope, pageRequest } from '../lib/pagination.js';
import { HttpProblem, notFound } from '../lib/problem.js';
import { DeliveryParams, problemResponses, SubscriptionParams } from '../lib/route-schemas.js';
import { findOwnSubscription } from '../lib/subscription-lookup.js';
import { toDelivery, toDeliveryDetail } from '../lib/views.js';

const deliveries: FastifyPluginAsyncTypebox<{ maxAttempts: number }> = async (app, options) => {
  const findDelivery = async (subscriptionId: string, deliveryId: string) => {
    const row = isUuid(deliveryId)
      ? await app.prisma.delivery.findFirst({
          where: { id: deliveryId, subscriptionId },
          include: { event: true, attempts: { orderBy: [{ attemptNumber: 'asc' }, { id: 'asc' }] } },
        })
      : null;
    if (row === null) throw notFound(`Delivery ${deliveryId}`);
    return row;
  };

  app.get(
    '/api/webhooks/:id/deliveries',
    {
      schema: {
        tags: ['deliveries'],
        summary: 'Deliveries of a subscription, newest first',
        params: SubscriptionParams,
        querystring: DeliveryListQuery,
        response: { 200: Page(Delivery), ...problemResponses },
      },
    },
    async (request) => {
      const subscription = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const page = pageRequest(request.query);
      const where = {
        subscriptionId: subscription.id,
        ...(request.query.status === undefined ? {} : { status: request.query.status }),
      };
      const [count, rows] = await app.prisma.$transaction([
        app.prisma.delivery.count({ where }),
        app.prisma.delivery.findMany({
          where,
          include: { event: { select: { type: true } } },
          orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
          skip: page.skip,
          take: page.pageSize,
        }),
      ]);
      return pageEnvelope(
        `/api/webhooks/${subscription.id}/deliveries`,
        request.query,
        page,
        count,
        rows.map(toDelivery),
      );
    },
  );

  app.get(
    '/api/webhooks/:id/deliveries/:delivery_id',
    {
      schema: {
        tags: ['deliveries'],
        summary: 'One delivery with its payload and every attempt',
        params: DeliveryParams,
        response: { 200: DeliveryDetail, ...problemResponses },
      },
    },
    async (request) => {
      const subscription = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      return toDeliveryDetail(await findDelivery(subscription.id, request.params.delivery_id), subscription);
    },
  );

  app.post(
    '/api/webhooks/:id/deliveries/:delivery_id/retry',
    {
      schema: {
        tags: ['deliveries'],
        summary: 'Redeliver a failed delivery with a fresh round of attempts',
        params: DeliveryParams,
        response: { 202: Delivery, 409: Problem, ...problemResponses },
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
      if (subscription.status !== 'active') {
        throw new HttpProblem(
          409,
          'conflict',
          'The subscription is disabled; set its status to active first',
        );
      }
      // Only the request that moves it back to pending enqueues, so two concurrent retries make one round.
      const claimed = await app.prisma.delivery.updateMany({
        where: { id: delivery.id, status: delivery.status },
        data: { status: 'pending', nextAttemptAt: new Date() },
      });
      if (claimed.count === 1) {
        const jobId = deliveryJobId(delivery.eventId, delivery.subscriptionId, delivery.attemptsMade + 1);
        await app.deliveryQueue.add(
          'delivery',
          { eventId: delivery.eventId, subscriptionId: delivery.subscriptionId },
          deliveryJobOptions(options.maxAttempts, jobId),
        );
      }
      const row = await app.prisma.delivery.findUniqueOrThrow({
        where: { id: delivery.id },
        include: { event: { select: { type: true } } },
      });
      return reply.code(202).send(toDelivery(row));
    },
  );
};

export default deliveries;
