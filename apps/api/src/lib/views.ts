/**
 * Rows to wire resources (snake_case, ISO 8601, `resource_uri` links as the specification's §1
 * asks) and their collection pages; every address is built here, under PUBLIC_BASE_URL when set.
 */
import type { Delivery, DeliveryAttempt, Event, Subscription as SubscriptionRow } from '@webhooks/db';
import {
  buildDeliveryPayload,
  destinationOf,
  openAwsCredentials,
  awsCredentialsView,
  formatPayloadTimestamp,
  maskCustomHeaders,
  openClientCertificate,
  openCustomHeaders,
  openReceiverAuth,
  maskedReceiverAuth,
  schemeOfSecret,
  summarizeCertificate,
  resourceLinks,
  type Catalogue,
  type SecretBox,
  type EventFilter,
  type DeliveryThrottle,
  type Delivery as DeliveryView,
  type DeliveryDetail,
  type EventCatalogueResponse,
  type EventDelivery,
  type EventDetail,
  type EventSummary,
  type Subscription,
} from '@webhooks/shared';

import { pageEnvelope, type PageRequest } from './pagination.js';

/**
 * An attempt's error class as the account reads it: an unresolved name and an SSRF-refused address
 * are both `unreachable_address`, so the log does not reveal internal names; the worker's logs keep them apart.
 */
export function accountErrorClass(errorClass: string | null): string | null {
  return errorClass === 'dns' || errorClass === 'blocked_address' ? 'unreachable_address' : errorClass;
}

type DeliveryRow = Delivery & { event: Pick<Event, 'type'> };

/** The presenters of one API, bound to its base URL. */
export type Views = ReturnType<typeof createViews>;

/** The presenters under `baseUrl` (PUBLIC_BASE_URL, or `''`), with `catalogue`'s types and `secretBox`'s headers. */
export function createViews(baseUrl: string, catalogue: Catalogue, secretBox: SecretBox) {
  const links = resourceLinks(baseUrl);

  /** The summary of a subscription's client certificate, or null for none. */
  const clientCertificateSummary = (row: SubscriptionRow) => {
    const stored = openClientCertificate(row.clientTls, row.id, secretBox);
    return stored === null ? null : summarizeCertificate(stored.certificate);
  };

  /** Where a subscription delivers, with its customer-owned credentials (never the secret key nor the external id). */
  const destinationView = (row: SubscriptionRow): Subscription['destination'] => {
    const credentials = openAwsCredentials(row.destinationCredentials, row.id, secretBox);
    const destination = destinationOf(row.callbackUrl);
    return (
      credentials === null
        ? destination
        : { ...destination, credentials: awsCredentialsView(credentials, false) }
    ) as Subscription['destination'];
  };

  /** A subscription as returned (never its secret), with its pacing (`delivery`) from the gate in Redis. */
  function subscription(row: SubscriptionRow, throttle: DeliveryThrottle): Subscription {
    return {
      id: row.id,
      resource_uri: links.subscription(row.id),
      callback_url: row.callbackUrl,
      destination: destinationView(row),
      webhook_id: row.webhookId,
      account_id: row.accountId,
      kind: row.kind,
      event_types: row.eventTypes.length > 0 ? row.eventTypes : [...catalogue.typesOfKind(row.kind)],
      filter: row.filter as EventFilter | null,
      ordering: row.ordering as Subscription['ordering'],
      headers: maskCustomHeaders(
        openCustomHeaders(row.headers, row.id, secretBox),
      ) as Subscription['headers'],
      client_certificate: clientCertificateSummary(row),
      auth: maskedReceiverAuth(openReceiverAuth(row.auth, row.id, secretBox)),
      transformation: row.transformation,
      signature_scheme: schemeOfSecret(secretBox.open(row.secret, row.id)),
      status: row.status,
      rate_limit: row.rateLimit,
      delivery: throttle,
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString(),
    };
  }

  /** A delivery row with its event's type, as listed. */
  function delivery(row: DeliveryRow): DeliveryView {
    return {
      id: row.id,
      resource_uri: links.delivery(row.subscriptionId, row.id),
      subscription: { resource_uri: links.subscription(row.subscriptionId) },
      event_id: row.eventId,
      type: row.event.type,
      status: row.status,
      attempts_made: row.attemptsMade,
      last_status_code: row.lastStatusCode,
      last_error: accountErrorClass(row.lastError),
      next_attempt_at: row.nextAttemptAt?.toISOString() ?? null,
      created_at: row.createdAt.toISOString(),
      updated_at: row.updatedAt.toISOString(),
    };
  }

  /** An event row as listed. */
  function event(
    row: Pick<Event, 'id' | 'type' | 'occurredAt' | 'createdAt' | 'payloadExpungedAt'>,
  ): EventSummary {
    return {
      id: row.id,
      resource_uri: links.event(row.id),
      type: row.type,
      timestamp: formatPayloadTimestamp(row.occurredAt),
      created_at: row.createdAt.toISOString(),
      payload_expunged: row.payloadExpungedAt !== null,
      payload_expunged_at: row.payloadExpungedAt?.toISOString() ?? null,
    };
  }

  return {
    /** The resources' addresses under `baseUrl`. */
    links,
    subscription,
    delivery,
    event,
    /** An event with its data and its delivery to each subscription. */
    eventDetail: (row: Event, deliveries: Delivery[]): EventDetail => ({
      ...event(row),
      data: row.data as Record<string, unknown>,
      deliveries: deliveries.map((d): EventDelivery => ({
        id: d.id,
        resource_uri: links.delivery(d.subscriptionId, d.id),
        subscription: { id: d.subscriptionId, resource_uri: links.subscription(d.subscriptionId) },
        status: d.status,
        attempts_made: d.attemptsMade,
        last_status_code: d.lastStatusCode,
        last_error: accountErrorClass(d.lastError),
        next_attempt_at: d.nextAttemptAt?.toISOString() ?? null,
        updated_at: d.updatedAt.toISOString(),
      })),
    }),
    /** One page of the account's events, with links carrying the query's filters. */
    eventsPage: (
      query: Record<string, unknown>,
      page: PageRequest,
      count: number,
      rows: Parameters<typeof event>[0][],
    ) => pageEnvelope(links.events, query, page, count, rows.map(event)),
    /** The catalogue: each kind, its endpoint, its types with description, schema, deprecation and example. */
    catalogue: (): EventCatalogueResponse => ({
      kinds: catalogue.kinds.map(({ kind, description, types }) => ({
        kind,
        description,
        subscribe_uri: links.kindSubscriptions(kind),
        types: types.map((t) => t.type),
        event_types: types.map((t) => ({
          type: t.type,
          description: t.description,
          schema: t.schema,
          deprecated: t.deprecated,
        })),
        example_data: Object.fromEntries(types.map((t) => [t.type, t.example])),
      })),
    }),
    /** The portal page with a one-time `link` in its fragment, which browsers keep to themselves. */
    portalLink: (link: string) => `${links.portal}#link=${link}`,
    /** A delivery with the payload it sends and every attempt, oldest first. */
    deliveryDetail(
      row: Delivery & { event: Event; attempts: DeliveryAttempt[] },
      owner: Pick<SubscriptionRow, 'webhookId'>,
    ): DeliveryDetail {
      const payload = buildDeliveryPayload(
        {
          timestamp: formatPayloadTimestamp(row.event.occurredAt),
          type: row.event.type,
          data: row.event.data as Record<string, unknown>,
        },
        owner,
      );
      return {
        ...delivery(row),
        payload: { ...payload },
        payload_expunged: row.event.payloadExpungedAt !== null,
        attempts: row.attempts.map((attempt) => ({
          attempt_number: attempt.attemptNumber,
          started_at: attempt.startedAt.toISOString(),
          duration_ms: attempt.durationMs,
          status_code: attempt.statusCode,
          error: accountErrorClass(attempt.errorClass),
          error_message: attempt.errorMessage,
          response_body: attempt.responseBody,
          in_flight_limit: attempt.inFlightLimit,
        })),
      };
    },
    /** One page of the account's subscriptions, with links carrying the query's filters. */
    subscriptionsPage: (
      query: Record<string, unknown>,
      page: PageRequest,
      count: number,
      results: Subscription[],
    ) => pageEnvelope(links.subscriptions, query, page, count, results),
    /** One page of a subscription's deliveries (rows), with links carrying the query's filters. */
    deliveriesPage: (
      subscriptionId: string,
      query: Record<string, unknown>,
      page: PageRequest,
      count: number,
      rows: DeliveryRow[],
    ) => pageEnvelope(links.deliveries(subscriptionId), query, page, count, rows.map(delivery)),
  };
}
