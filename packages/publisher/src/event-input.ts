/** Validation of an event before it is accepted, shared by the publisher and `POST /api/events`. */
import { validate as isUuid } from 'uuid';
import { isValidAccountId, maxAccountIdLength } from './account-id.js';
import type { Catalogue } from './catalogue.js';
import { findUnstorableJson, maxDataDepth, unstorableTextReason } from './storable-json.js';

/** Largest `data` accepted, in bytes of its JSON serialization (256 KiB). */
export const maxEventDataBytes = 256 * 1024;

/** Longest idempotency key accepted, in characters. */
export const maxIdempotencyKeyLength = 255;

/** Input refused: `status` the API's (400; 413 for oversized `data`), `pointer` the field (RFC 6901). */
export class EventInputError extends Error {
  constructor(
    message: string,
    readonly pointer: string,
    readonly status: 400 | 413 = 400,
    /** Every field refused, when there are several (a schema's errors); `pointer` is the first. */
    readonly errors: readonly { pointer: string; detail: string }[] = [{ pointer, detail: message }],
  ) {
    super(message);
    this.name = 'EventInputError';
  }
}

/** What a publisher needs to know of one event. */
export interface EventInput {
  /** The account whose subscriptions receive the event (the JWT `sub` on the API side). */
  accountId: string;
  /** An event type of the catalogue, `<resource>.<action>`. */
  type: string;
  /** The event's own content: a JSON object, at most 256 KiB serialized. */
  data: Record<string, unknown>;
  /** When the event occurred; defaults to now. A Date or an ISO 8601 string. */
  occurredAt?: Date | string | undefined;
  /** A second publish with the same key for the same account within 24 hours enqueues nothing. */
  idempotencyKey?: string | undefined;
  /** The request that published it (`X-Request-Id`), carried to the worker's log lines. */
  requestId?: string | undefined;
  /** A test event's subscription (the caller checks the account owns it): only it receives the event. */
  subscriptionId?: string | undefined;
  /** The event id (UUIDv7) the caller reserved, e.g. to record an idempotency key first; else a new one. */
  id?: string | undefined;
}

/**
 * Checks `data` against every event's limits: a JSON object PostgreSQL can store, at most
 * {@link maxDataDepth} deep and {@link maxEventDataBytes} serialized; `pointer` is where it sits.
 * @throws EventInputError 400 naming the offending place, or 413 for `data` too large
 */
export function checkEventData(data: unknown, pointer = '/data'): void {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) {
    throw new EventInputError('data must be a JSON object', pointer);
  }
  const unstorable = findUnstorableJson(data, pointer, maxDataDepth);
  if (unstorable !== null) {
    throw new EventInputError(`data ${unstorable.detail}`, unstorable.pointer);
  }
  const bytes = Buffer.byteLength(JSON.stringify(data));
  if (bytes > maxEventDataBytes) {
    throw new EventInputError(
      `data is ${bytes} bytes serialized; the limit is ${maxEventDataBytes}`,
      pointer,
      413,
    );
  }
}

/**
 * Checks an event against `catalogue` and the limits, and returns when it occurred.
 * @throws EventInputError 400 for an unknown or operational type (outside a test event), `data` its
 *   schema refuses (every failing pointer listed, at most 20) or {@link checkEventData} refuses, an
 *   account id {@link isValidAccountId} refuses, a bad date, idempotency key or subscription id, or
 *   text PostgreSQL cannot store (storable-json.ts); 413 for `data` over {@link maxEventDataBytes}.
 */
export function checkEventInput(input: EventInput, catalogue: Catalogue): Date {
  if (!isValidAccountId(input.accountId)) {
    throw new EventInputError(
      `accountId must be a non-blank string of at most ${maxAccountIdLength} characters, without control characters`,
      '/account_id',
    );
  }
  if (typeof input.type !== 'string' || catalogue.entry(input.type) === undefined) {
    throw new EventInputError(
      `Unknown event type ${JSON.stringify(input.type)}; GET /api/event-types lists them`,
      '/type',
    );
  }
  if (catalogue.isOperationalType(input.type) && input.subscriptionId === undefined) {
    throw new EventInputError(
      `${input.type} is an operational event type: only the service emits it`,
      '/type',
    );
  }
  checkEventData(input.data);
  const schemaErrors = catalogue.checkData(input.type, input.data);
  if (schemaErrors.length > 0) {
    const listed = schemaErrors.map((e) => `${e.pointer} ${e.detail}`).join('; ');
    throw new EventInputError(
      `data does not match the schema of ${input.type}: ${listed}`,
      schemaErrors[0]!.pointer,
      400,
      schemaErrors,
    );
  }
  if (
    input.idempotencyKey !== undefined &&
    (typeof input.idempotencyKey !== 'string' ||
      input.idempotencyKey.length === 0 ||
      input.idempotencyKey.length > maxIdempotencyKeyLength ||
      unstorableTextReason(input.idempotencyKey) !== null)
  ) {
    throw new EventInputError(
      `idempotency key must be a string of 1 to ${maxIdempotencyKeyLength} characters, without NUL or lone surrogates`,
      '/idempotency_key',
    );
  }
  if (input.id !== undefined && !isUuid(input.id)) {
    throw new EventInputError('event id must be a UUID', '/id');
  }
  if (input.subscriptionId !== undefined && !isUuid(input.subscriptionId)) {
    throw new EventInputError('subscription id must be a UUID', '/subscription_id');
  }
  const occurredAt = input.occurredAt === undefined ? new Date() : new Date(input.occurredAt);
  if (Number.isNaN(occurredAt.getTime())) {
    throw new EventInputError('occurred_at must be an ISO 8601 date-time', '/occurred_at');
  }
  return occurredAt;
}
