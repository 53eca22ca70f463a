/**
 * `POST /api/webhooks/{id}/filter-tests`: whether a sample payload would be delivered here (event
 * types, and the content filter or a candidate one). Nothing is stored; the sample meets a published
 * event's limits (400/413 naming `/payload/data`), the filter its budget.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import {
  checkEventData,
  compileEventFilter,
  FilterTestCreate,
  FilterTestResult,
  passesEventFilter,
  typesReceivedBy,
  type Catalogue,
  type EventFilter,
} from '@webhooks/shared';
import { publishProblem } from '../lib/publish-problem.js';
import { problemResponses, SubscriptionParams } from '../lib/route-schemas.js';
import { findOwnSubscription } from '../lib/subscription-lookup.js';
import { checkSubscriptionSelection } from '../lib/subscription-selection.js';

const filterTests: FastifyPluginAsyncTypebox<{ catalogue: Catalogue }> = async (app, { catalogue }) => {
  app.post(
    '/api/webhooks/:id/filter-tests',
    {
      config: { shedUnderPressure: true },
      schema: {
        tags: ['subscriptions'],
        operationId: 'testSubscriptionFilter',
        summary: 'Whether an event with this payload would be delivered to this subscription',
        description:
          'Evaluates the subscription’s content filter, or the `filter` sent (checked as an update would be), against `payload`, and its event types against `payload.type`. Publishes nothing.',
        params: SubscriptionParams,
        body: FilterTestCreate,
        response: { 200: FilterTestResult, ...problemResponses },
      },
    },
    async (request) => {
      const subscription = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const { payload, filter: candidate } = request.body;
      // The sample is held to the limits of a published event, so a test costs no more than one.
      try {
        checkEventData(payload.data, '/payload/data');
      } catch (error) {
        throw publishProblem(error, request.log);
      }
      checkSubscriptionSelection(catalogue, subscription.kind, undefined, candidate);
      const filter = candidate !== undefined ? candidate : (subscription.filter as EventFilter | null);
      // Compiled inside the test: a stored filter sift cannot compile matches nothing, never a 500.
      const filterMatches =
        filter === null || passesEventFilter((tested) => compileEventFilter(filter)(tested), payload);
      const typeReceived =
        payload.type === undefined
          ? null
          : typesReceivedBy(catalogue.typesOfKind, subscription).includes(payload.type);
      return {
        matches: filterMatches && typeReceived !== false,
        filter_matches: filterMatches,
        type_received: typeReceived,
        filter,
      };
    },
  );
};

export default fp(filterTests, { name: 'filter-test-routes', encapsulate: true });
