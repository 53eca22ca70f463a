/**
 * `POST /api/webhooks/{id}/test-events`: one example event of a catalogue type to this subscription
 * only (Svix's "send example"), as a portal token may not publish to the account. A real event,
 * stored, signed, retried and logged; it goes out whatever the content filter says.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import { EventAccepted, TestEventCreate, typesReceivedBy, type Catalogue } from '@webhooks/shared';
import { HttpProblem, subscriptionDisabled } from '../lib/problem.js';
import { admitPublish, type PublishAdmission } from '../lib/publish-admission.js';
import { publishProblem } from '../lib/publish-problem.js';
import { problemResponse, problemResponses, SubscriptionParams } from '../lib/route-schemas.js';
import { findOwnSubscription } from '../lib/subscription-lookup.js';

/** Options of the test-event route: the catalogue, and the bound and quota every publish passes. */
export interface TestEventOptions {
  catalogue: Catalogue;
  admission: PublishAdmission;
}

const testEvents: FastifyPluginAsyncTypebox<TestEventOptions> = async (app, { catalogue, admission }) => {
  app.post(
    '/api/webhooks/:id/test-events',
    {
      config: { shedUnderPressure: true },
      schema: {
        tags: ['subscriptions'],
        operationId: 'sendTestEvent',
        summary: 'Send an example event of one type to this subscription only',
        params: SubscriptionParams,
        body: TestEventCreate,
        response: {
          202: EventAccepted,
          409: problemResponse('The subscription is disabled: set its status to active first'),
          ...problemResponses,
        },
      },
      preValidation: async (request) => {
        request.body ??= {};
      },
    },
    async (request, reply) => {
      const subscription = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const received = typesReceivedBy(catalogue.typesOfKind, subscription);
      const type = request.body.type ?? received[0]!;
      const entry = catalogue.entry(type);
      if (!received.includes(type) || entry === undefined) {
        const detail = `This subscription does not receive ${JSON.stringify(type)}; it receives ${received.join(', ')}`;
        throw new HttpProblem(400, 'validation', detail, [{ pointer: '/type', detail }]);
      }
      if (subscription.status !== 'active') throw subscriptionDisabled();
      // A developer's test is an event like any other: it passes the backlog bound and pays the quota.
      await admitPublish(admission, request.accountId, entry.example, request.log);
      const published = await app.publisher
        .publish({
          accountId: request.accountId,
          type,
          data: entry.example,
          requestId: request.id,
          subscriptionId: subscription.id,
        })
        .catch((error: unknown) => {
          throw publishProblem(error, request.log);
        });
      // A test event has no idempotency key, so it is never a duplicate and always has its timestamp.
      return reply.code(202).send({ ...published, timestamp: published.timestamp ?? '' });
    },
  );
};

export default fp(testEvents, { name: 'test-event-routes', encapsulate: true });
