/**
 * The subscription resource (docs/api.md): create (201 + Location; 409 past the account's maximum),
 * list, read, update, delete (204), scoped to the token's account. With CALLBACK_VERIFICATION=challenge
 * a new or moved callback stays `pending` until it answers the worker's challenge.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import fp from 'fastify-plugin';
import type { FastifyBaseLogger } from 'fastify';
import Type from 'typebox';
import { v7 as uuidv7 } from 'uuid';
import {
  generateSigningSecret,
  verificationKey,
  Page,
  Subscription,
  SubscriptionCreate,
  SubscriptionCreated,
  SubscriptionListQuery,
  SubscriptionUpdate,
  type BrokerConfig,
  type CallbackPolicy,
  type Catalogue,
  type InFlightBounds,
  type QueueShards,
  type SecretBox,
  type TransformationRunner,
  checkCallbackUrl,
  receiverAuthFromInput,
  sealReceiverAuth,
  tokenUrlRefusal,
  type ReceiverAuthInput,
  type TokenUrlRules,
} from '@webhooks/shared';
import { clearsCredentials, writeTarget } from '../lib/destination-target.js';
import { destinationCredentials, withMadeCredentials } from '../lib/destination-credentials.js';
import { sealedClientCertificate, sealedCustomHeaders } from '../lib/callback-credentials.js';
import { pageRequest } from '../lib/pagination.js';
import {
  checkSubscriptionSelection,
  receivesTypeCondition,
  storedFilter,
} from '../lib/subscription-selection.js';
import { HttpProblem, type FieldError } from '../lib/problem.js';
import {
  payloadTooLarge,
  problemResponse,
  problemResponses,
  SubscriptionParams,
} from '../lib/route-schemas.js';
import { deleteOwnSubscription, findOwnSubscription, updateIfUnchanged } from '../lib/subscription-lookup.js';
import type { RelayCopies } from '../lib/relay-copies.js';
import type { Views } from '../lib/views.js';
import { noStore } from '../lib/headers.js';
import { requestChallenge } from '../lib/challenge-request.js';
import { createSubscriptionPresenter } from '../lib/subscription-presenter.js';
import { checkTransformation } from '../lib/transformation-check.js';
import { subscriptionChange } from '../lib/subscription-update.js';

/** Options of the subscription routes. */
export interface SubscriptionRoutesOptions {
  /** Where callbacks may point (CALLBACK_ALLOW_PRIVATE, CALLBACK_PORTS, CALLBACK_DENY_CIDRS). */
  callbackPolicy: CallbackPolicy;
  /** Appended to a refusal that CALLBACK_ALLOW_PRIVATE would lift; empty outside development. */
  callbackHint: string;
  /** Seals the signing secret of a new subscription for storage. */
  secretBox: SecretBox;
  /** The sandbox a `transformation` is checked in; null when TRANSFORMATIONS=false. */
  transformations: TransformationRunner | null;
  /** QUEUE_SHARDS: where the delivery gates live. */
  shards: QueueShards;
  /** SUBSCRIPTION_MAX_IN_FLIGHT and SUBSCRIPTION_IN_FLIGHT_CEILING: what `delivery.in_flight_limit` is read against. */
  inFlightBounds: InFlightBounds;
  /** Subscriptions an account may have (MAX_SUBSCRIPTIONS_PER_ACCOUNT, or its override). */
  maxPerAccount: (accountId: string) => number;
  /** CALLBACK_VERIFICATION=challenge: new and moved callbacks wait `pending` for their challenge. */
  verifyCallbacks: boolean;
  /** Presenters under PUBLIC_BASE_URL. */
  views: Views;
  /** Where an OAuth 2.0 token URL may point beside the callback policy. */
  tokenUrlRules: TokenUrlRules;
  /** The `webhooks listen` sessions' copies of payloads: a deleted cli subscription's go at once. */
  relayCopies: RelayCopies;
  /** The event catalogue: a create route per kind, and the types a subscription may choose. */
  catalogue: Catalogue;
  /** DELIVERY_MAX_ATTEMPTS, for the jobs of deliveries released from FIFO ordering. */
  maxAttempts: number;
  /** DESTINATION_BROKERS: the brokers a `destination` may name. */
  brokers: ReadonlyMap<string, BrokerConfig>;
}

/** A create route's `operationId` (`createSubscription`, `createCallsSubscription`, …): SDKs name methods after it. */
export function createSubscriptionOperation(kind: string | null): string {
  return kind === null ? 'createSubscription' : `create${kind[0]!.toUpperCase()}${kind.slice(1)}Subscription`;
}

const subscriptions: FastifyPluginAsyncTypebox<SubscriptionRoutesOptions> = async (app, options) => {
  const rejectBadCallback = (url: string) => {
    const error: FieldError | null = checkCallbackUrl(
      url,
      options.callbackPolicy,
      '/callback_url',
      options.callbackHint,
    );
    if (error) throw new HttpProblem(400, 'validation', `callback_url ${error.detail}`, [error]);
  };

  /**
   * `input` sealed for subscription `id` delivering to `callbackUrl`, or null; its OAuth 2.0 token URL
   * must be a valid callback URL and meet the token URL rules (`tokenUrlRefusal`).
   * @throws HttpProblem 400 naming `/auth/token_url`
   */
  const sealAuth = (input: ReceiverAuthInput | null, id: string, callbackUrl: string): string | null => {
    if (input?.type === 'oauth2_client_credentials') {
      const error = checkCallbackUrl(
        input.token_url,
        options.callbackPolicy,
        '/auth/token_url',
        options.callbackHint,
      );
      if (error) throw new HttpProblem(400, 'validation', `auth.token_url ${error.detail}`, [error]);
      const refused = tokenUrlRefusal(input.token_url, callbackUrl, options.tokenUrlRules);
      if (refused !== null)
        throw new HttpProblem(400, 'validation', `auth.token_url ${refused}`, [
          { pointer: '/auth/token_url', detail: refused },
        ]);
    }
    return input === null ? null : sealReceiverAuth(receiverAuthFromInput(input), id, options.secretBox);
  };

  const { present, presentOne, presentWritten } = createSubscriptionPresenter(
    app.redis,
    options.shards,
    options.inFlightBounds,
    options.views,
  );

  /** Queues a pending subscription's challenge; a Redis fault is logged (`POST …/verification` asks again). */
  const requestVerification = async (subscriptionId: string, callbackUrl: string, log: FastifyBaseLogger) => {
    try {
      await requestChallenge(app.verificationQueue, subscriptionId, callbackUrl);
    } catch (error) {
      log.warn({ err: error, subscriptionId }, 'callback verification not queued; the client can ask again');
    }
  };

  const { catalogue } = options;
  /** Gives jobs to a subscription's deliveries held for their FIFO turn; on a Redis fault, the reconciler does. */
  const releaseWaiting = async (subscriptionId: string, accountId: string, log: FastifyBaseLogger) => {
    const waiting = await app.prisma.delivery.findMany({
      where: { subscriptionId, status: 'pending' },
      select: { eventId: true, round: true },
    });
    try {
      for (let i = 0; i < waiting.length; i += 1000) {
        await app.deliveryQueues.add(
          waiting
            .slice(i, i + 1000)
            .map((d) => ({ eventId: d.eventId, subscriptionId, accountId, round: d.round })),
          options.maxAttempts,
        );
      }
    } catch (error) {
      log.warn({ err: error, subscriptionId }, 'waiting deliveries not queued; the reconciler will');
    }
  };

  const create = (kind: string | null) =>
    app.post(
      kind === null ? '/api/webhooks' : `/api/webhooks/${kind}`,
      {
        // A create may run the sandbox (a transformation) and resolve the callback: shed under pressure.
        config: { shedUnderPressure: true },
        schema: {
          tags: ['subscriptions'],
          operationId: createSubscriptionOperation(kind),
          summary:
            kind === null
              ? 'Subscribe to every event type'
              : `Subscribe to ${kind} events (${catalogue.typesOfKind(kind).join(', ')})`,
          body: SubscriptionCreate,
          response: {
            201: SubscriptionCreated,
            403: problemResponse('`account_id` differs from the account of the token'),
            409: problemResponse('The account has MAX_SUBSCRIPTIONS_PER_ACCOUNT subscriptions already'),
            413: payloadTooLarge,
            ...problemResponses,
          },
        },
      },
      async (request, reply) => {
        const { webhook_id, rate_limit, account_id, event_types, filter, ordering, headers } = request.body;
        const clientCertificate = request.body.client_certificate ?? null;
        if (account_id !== undefined && account_id !== request.accountId) {
          throw new HttpProblem(403, 'forbidden', 'account_id differs from the account of the token', [
            { pointer: '/account_id', detail: 'must equal the token subject, or be left out' },
          ]);
        }
        const target = writeTarget(
          request.body,
          options.brokers,
          request.accountId,
          rejectBadCallback,
          true,
        )!;
        checkSubscriptionSelection(catalogue, kind, event_types, filter);
        await checkTransformation(options.transformations, request.body.transformation, request.accountId);
        const id = uuidv7();
        const sealedHeaders = sealedCustomHeaders(headers ?? null, id, options.secretBox);
        const clientTls = sealedClientCertificate(clientCertificate, id, options.secretBox);
        const auth = sealAuth(request.body.auth ?? null, id, target.callbackUrl);
        const credentials = destinationCredentials(target, id, options.secretBox);
        const secret = generateSigningSecret(request.body.signature_scheme ?? 'v1');
        const row = await app.prisma.$transaction(async (tx) => {
          // One account's creates queue behind each other here, so concurrent ones cannot pass the cap together.
          await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${request.accountId}, 0))`;
          const existing = await tx.subscription.count({ where: { accountId: request.accountId } });
          const max = options.maxPerAccount(request.accountId);
          if (existing >= max) {
            throw new HttpProblem(
              409,
              'subscription-limit',
              `This account has ${existing} subscriptions, the most its max_subscriptions quota allows (${max}); delete one first`,
            );
          }
          return tx.subscription.create({
            data: {
              id,
              accountId: request.accountId,
              callbackUrl: target.callbackUrl,
              webhookId: webhook_id ?? null,
              kind,
              eventTypes: event_types ?? [],
              filter: storedFilter(filter ?? null),
              ordering: ordering ?? 'none',
              rateLimit: rate_limit ?? null,
              headers: sealedHeaders,
              clientTls,
              auth,
              destinationCredentials: credentials.sealed ?? null,
              transformation: request.body.transformation ?? null,
              secret: options.secretBox.seal(secret, id),
              // A broker answers no challenge: the operator named it.
              ...(options.verifyCallbacks && !target.broker ? { status: 'pending' as const } : {}),
            },
          });
        });
        if (row.status === 'pending') await requestVerification(row.id, row.callbackUrl, request.log);
        const body = {
          ...withMadeCredentials(await presentWritten(row), credentials.made),
          secret: verificationKey(secret),
        };
        return reply.code(201).headers(noStore).header('location', body.resource_uri).send(body);
      },
    );
  create(null);
  for (const { kind } of catalogue.kinds) create(kind);

  app.get(
    '/api/webhooks',
    {
      schema: {
        tags: ['subscriptions'],
        operationId: 'listSubscriptions',
        summary: "The caller's subscriptions, oldest first",
        querystring: SubscriptionListQuery,
        response: { 200: Page(Subscription), ...problemResponses },
      },
    },
    async (request) => {
      const page = pageRequest(request.query, 'narrow the query with status or type');
      const { type, status } = request.query;
      const where = {
        accountId: request.accountId,
        ...(type === undefined ? {} : receivesTypeCondition(catalogue, type)),
        ...(status === undefined ? {} : { status }),
      };
      const [count, rows] = await app.prisma.$transaction([
        app.prisma.subscription.count({ where }),
        app.prisma.subscription.findMany({
          where,
          orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
          skip: page.skip,
          take: page.pageSize,
        }),
      ]);
      return options.views.subscriptionsPage(request.query, page, count, await present(rows));
    },
  );

  app.get(
    '/api/webhooks/:id',
    {
      schema: {
        tags: ['subscriptions'],
        operationId: 'getSubscription',
        summary: 'One subscription',
        params: SubscriptionParams,
        response: { 200: Subscription, ...problemResponses },
      },
    },
    async (request) =>
      presentOne(await findOwnSubscription(app.prisma, request.accountId, request.params.id)),
  );

  app.put(
    '/api/webhooks/:id',
    {
      // As a create: it may run the sandbox.
      config: { shedUnderPressure: true },
      schema: {
        tags: ['subscriptions'],
        operationId: 'updateSubscription',
        summary:
          'Change the callback URL, the webhook_id, the event types, the filter, the rate limit, the custom headers, the client certificate or the status',
        description: 'Setting `status: "active"` re-enables a subscription disabled after failed deliveries.',
        params: SubscriptionParams,
        body: SubscriptionUpdate,
        response: {
          200: Subscription,
          409: problemResponse(
            'A status change while the callback is `pending` its challenge (type `/problems/verification-pending`), or the subscription changed while this update was applied (type `/problems/conflict`): read it again and send the update again',
          ),
          413: payloadTooLarge,
          ...problemResponses,
        },
      },
    },
    async (request) => {
      const { body } = request;
      const current = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      const target = writeTarget(body, options.brokers, request.accountId, rejectBadCallback, false);
      const headers =
        body.headers === undefined
          ? undefined
          : sealedCustomHeaders(body.headers, current.id, options.secretBox);
      const cleared = clearsCredentials(body, target, current.callbackUrl);
      const clientTls = cleared
        ? null
        : body.client_certificate === undefined
          ? undefined
          : sealedClientCertificate(body.client_certificate, current.id, options.secretBox);
      const auth = cleared
        ? null
        : body.auth === undefined
          ? undefined
          : sealAuth(body.auth, current.id, target?.callbackUrl ?? current.callbackUrl);
      const credentials = destinationCredentials(target, current.id, options.secretBox);
      checkSubscriptionSelection(catalogue, current.kind, body.event_types, body.filter);
      await checkTransformation(options.transformations, body.transformation, request.accountId);
      const { data, moved, leavesFifo } = subscriptionChange(
        {
          callbackUrl: target?.callbackUrl,
          toBroker: target?.broker,
          webhookId: body.webhook_id,
          status: body.status,
          rateLimit: body.rate_limit,
          eventTypes: body.event_types,
          filter: body.filter === undefined ? undefined : storedFilter(body.filter),
          ordering: body.ordering,
          headers,
          clientTls,
          auth,
          destinationCredentials: credentials.sealed,
          transformation: body.transformation,
        },
        current,
        options.verifyCallbacks,
      );
      // On the state read above only: two concurrent updates (a new callback_url, a status) must not
      // both apply, or the status would skip the new URL's challenge. Leaving FIFO, a fan-out under
      // way commits first, so releaseWaiting reads its deliveries.
      const row = await updateIfUnchanged(app.prisma, current, data, { waitForFanOuts: leavesFifo });
      if (moved) await requestVerification(row.id, row.callbackUrl, request.log);
      if (leavesFifo) await releaseWaiting(row.id, request.accountId, request.log);
      return withMadeCredentials(await presentWritten(row), credentials.made);
    },
  );

  app.post(
    '/api/webhooks/:id/verification',
    {
      schema: {
        tags: ['subscriptions'],
        operationId: 'verifySubscription',
        summary: 'Send a pending subscription’s callback its challenge again',
        description:
          'With CALLBACK_VERIFICATION=challenge, a subscription is `pending` until its callback answers HTTP 200 with the `data.challenge` of a signed `webhook.verification` request (as the body, or as `challenge` in a JSON body). Ask again after fixing the callback: a challenge waiting for its next try is sent at once.',
        params: SubscriptionParams,
        response: {
          202: Subscription,
          409: problemResponse('The subscription is not pending: there is nothing to verify'),
          ...problemResponses,
        },
      },
    },
    async (request, reply) => {
      const current = await findOwnSubscription(app.prisma, request.accountId, request.params.id);
      if (current.status !== 'pending')
        throw new HttpProblem(409, 'conflict', 'The subscription is not pending: there is nothing to verify');
      await requestChallenge(app.verificationQueue, current.id, current.callbackUrl);
      return reply.code(202).send(await presentOne(current));
    },
  );

  app.delete(
    '/api/webhooks/:id',
    {
      schema: {
        tags: ['subscriptions'],
        operationId: 'deleteSubscription',
        summary: 'Delete a subscription; its pending deliveries are dropped',
        params: SubscriptionParams,
        response: { 204: Type.Null(), ...problemResponses },
      },
    },
    async (request, reply) => {
      const callbackUrl = await deleteOwnSubscription(app.prisma, request.accountId, request.params.id);
      try {
        await options.relayCopies.dropSession(callbackUrl);
      } catch (error) {
        request.log.warn({ err: error }, "the deleted subscription's relay session is left to expire");
      }
      return reply.code(204).send(null);
    },
  );
};

export default fp(subscriptions, { name: 'subscription-routes', encapsulate: true });
