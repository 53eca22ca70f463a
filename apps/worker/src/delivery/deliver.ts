/**
 * One step of one round of a delivery, the attempt path every caller shares (the `deliveries`
 * processor, the inline first attempt, the ordered hand-over), in order: expiry; one admission
 * (`gate.ts`: the subscription's slot, the round's claim, the account's turn if asked, the host's
 * share when the host is known); the read (`store.ts`); the host's share if not taken yet; the
 * transformation, the send, the outcome (`outcome.ts`), the record, one release. A step that
 * cannot go returns a wait, using no attempt. Only a sent request is an attempt; the round's
 * attempts are counted from the delivery row, so a re-created job continues where it was.
 * docs/delivery.md, "One delivery, step by step", tells what decides, waits and wakes at each step.
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import { SpanKind } from '@opentelemetry/api';
import {
  attemptsBeforeRound,
  brokerCapHost,
  brokerTarget,
  congestionSignal,
  inSpan,
  urlForSpan,
  type TransformationRunner,
} from '@webhooks/shared';
import type { WorkerMetrics } from '../metrics.js';
import type { AttemptResult, AttemptSender } from './attempt.js';
import { claimedWaitMs, type AttemptClaims } from './claim.js';
import type { DeliveryPolicy } from './backoff.js';
import { isExpired, roundStartedAt } from './expiry.js';
import type { DeliveryGate } from './gate.js';
import type { HostAsk, HostGate } from './host-gate.js';
import { parkedUntil, type ParkedDeliveries } from './parked.js';
import { decideOutcome } from './outcome.js';
import type { ReceiverAuthorizer } from './receiver-authorization.js';
import { buildAttemptRequest } from './request.js';
import { observeAttempt } from './observe-attempt.js';
import { cancelledByTransformation, transformStep } from './transform-step.js';
import {
  handsOverNext,
  oneInFlight,
  sentInOrder,
  type DeliveryStep,
  type EndedWithoutAttempt,
  type RoundRef,
} from './step.js';
import type { DeliveryStore, LoadedDelivery } from './store.js';

/** What a step needs. */
export interface DeliverDeps {
  store: DeliveryStore;
  sender: AttemptSender;
  /** The receiver's `Authorization`, from the subscription's `auth`. */
  authorizer: ReceiverAuthorizer;
  /** One run of a round at a time (claim.ts). */
  claims: AttemptClaims;
  /** The admission and release: subscription slot, claim, turn, and the host's share when known. */
  gate: DeliveryGate;
  /** The host's share asked alone: its host learnt only at the read, or moved by a transformation. */
  hostGate: HostGate;
  /** Runs subscriptions' transformations; null when TRANSFORMATIONS=false. */
  transformations: TransformationRunner | null;
  /** Backoff (the attempts are the round's own, {@link RoundRef.maxAttempts}). */
  policy: Pick<DeliveryPolicy, 'backoffMs'>;
  /** DELIVERY_MAX_AGE, in ms. */
  maxAgeMs: number;
  log: Logger;
  metrics: Pick<WorkerMetrics, 'deliveries' | 'attemptDuration' | 'attemptInFlightLimit' | 'deliveryLatency'>;
  /** Ordered delivery (fifo.ts): the watch on an account's earlier events' fan-outs. */
  fifo: { earlierFanOut: (accountId: string, eventId: string) => Promise<boolean> };
  /** The shard's count of parked deliveries per account, which the API's backlog bound reads. */
  parked: ParkedDeliveries;
}

/**
 * How long a job of a new round waits for the API to mark its row (the API enqueues first), in
 * ms; past it, the API gave the round up and the job is dropped.
 */
const roundStartGraceMs = 60_000;

/**
 * How long a delivery to a subscription still `pending` (its callback not yet verified) waits
 * before it looks again, in ms. Waiting uses no attempt; DELIVERY_MAX_AGE still applies.
 */
const unverifiedCallbackWaitMs = 10_000;

/**
 * How long a FIFO subscription's delivery that is not its head waits before it looks again, in
 * ms; the head's end wakes it sooner (`FifoHeads.ensure`). Waiting uses no attempt.
 */
const fifoTurnWaitMs = 1_000;

/** How long a FIFO head waits for an earlier event's fan-out to store its deliveries, in ms. */
const fifoFanOutWaitMs = 50;

/** The host whose cap an attempt to `url` counts in: a broker destination's is its broker's. */
function capHost(url: string): string {
  const broker = brokerTarget(url);
  return broker === null ? new URL(url).hostname : brokerCapHost(broker);
}

/** What an attempt to `subscription` asks of its callback's host. */
function hostAsk(subscription: LoadedDelivery['subscription']): HostAsk {
  const ask = { hostname: capHost(subscription.callbackUrl), accountId: subscription.accountId };
  return subscription.rateLimit === null ? ask : { ...ask, rate: subscription.rateLimit };
}

/** Most subscriptions whose host a process remembers ({@link createDeliver}'s `knownHosts`). */
const maxKnownHosts = 10_000;

/** The host slot a step holds, if any: the hostname asked and the account it counts in. */
type HeldHost = { hostname: string; accountId: string } | null;

/** What happened while the step held its slot. */
type WithinSlot =
  | { kind: 'done'; result: Exclude<EndedWithoutAttempt, 'expired'>; fifo: boolean }
  | { kind: 'wait'; waitMs: number }
  | { kind: 'sent'; delivery: LoadedDelivery; result: AttemptResult };

/**
 * What a step runs: one step of `ref`'s round. `onConfirmed`, when given, is called once the
 * step's attempt is confirmed (HTTP 200), while its record is written and before the step
 * returns; it must not throw. The ordered hand-over reads and sends the next head then
 * (`in-order.ts`).
 */
export type Deliver = (ref: RoundRef, onConfirmed?: () => void) => Promise<DeliveryStep>;

/**
 * Creates the step.
 *
 * @returns the step ({@link Deliver})
 * @throws (the function) pg's and ioredis' errors, and a stored secret no key opens: a fault
 *   around the attempt, not the callback's; the caller defers, and no attempt is used
 */
export function createDeliver(deps: DeliverDeps): Deliver {
  /**
   * What each subscription's last delivery read here asked of its host, so that a job's run, read
   * only after its admission, asks the same in it; the read corrects one that changed since.
   */
  const knownHosts = new Map<string, HostAsk>();
  /**
   * The step's work while it holds its subscription's slot. `host` is the host slot held: the one
   * the admission took, swapped here for the one the loaded callback or the transformed URL needs
   * (the one given back is pushed to `releases`, awaited with the subscription slot's release, so
   * that both go out in one write). The step gives back the one it ends with.
   */
  const withinSlot = async (
    ref: RoundRef,
    releases: Array<Promise<void>>,
    host: { held: HeldHost },
  ): Promise<WithinSlot> => {
    /** Holds a slot of `hostname`, counting `rate` when given; else says how long to wait. */
    const hold = async ({ hostname, accountId, rate }: HostAsk): Promise<number> => {
      const { held } = host;
      if (held?.hostname === hostname && held.accountId === accountId) return 0;
      if (held !== null) releases.push(deps.hostGate.release(held.hostname, held.accountId, ref.jobId));
      host.held = null;
      const counted =
        rate === undefined ? undefined : { subscriptionId: ref.subscriptionId, perSecond: rate };
      const waitMs = await deps.hostGate.acquire(hostname, accountId, ref.jobId, counted);
      if (waitMs === 0) host.held = { hostname, accountId };
      return waitMs;
    };
    const delivery = ref.loaded ?? (await deps.store.load(ref));
    if (delivery === null) return { kind: 'done', result: 'dropped', fifo: false };
    const fifo = delivery.subscription.ordering === 'fifo';
    if (delivery.round > ref.round) return { kind: 'done', result: 'not_pending', fifo };
    if (delivery.round < ref.round) {
      // The API enqueues a round before it marks the row; give it time, then take it as rolled back.
      return Date.now() - ref.enqueuedAt < roundStartGraceMs
        ? { kind: 'wait', waitMs: 1_000 }
        : { kind: 'done', result: 'not_pending', fifo };
    }
    if (delivery.status !== 'pending') return { kind: 'done', result: 'not_pending', fifo };
    const { event, subscription } = delivery;
    if (subscription.status === 'disabled') {
      await deps.store.cancel(delivery.id);
      return { kind: 'done', result: 'cancelled', fifo };
    }
    // A callback moved to a URL not yet verified: its deliveries wait for the challenge's answer.
    if (subscription.status === 'pending') return { kind: 'wait', waitMs: unverifiedCallbackWaitMs };
    if (fifo) {
      if (!delivery.isHead) return { kind: 'wait', waitMs: fifoTurnWaitMs };
      // A head read after its claim and the watch (`RoundRef.claimedAhead`) is checked already.
      if (ref.claimedAhead !== true) {
        if (await deps.fifo.earlierFanOut(subscription.accountId, event.id)) {
          return { kind: 'wait', waitMs: fifoFanOutWaitMs };
        }
        // The head again, after the watch and the claim: an earlier event fanned out between the
        // load and the watch was seen by neither, and a head read before the claim (handed over,
        // `in-order.ts`) may have been attempted meanwhile by another run, which must not repeat.
        const unchanged = await deps.store.isUnchangedHead({
          eventId: event.id,
          subscriptionId: subscription.id,
          round: delivery.round,
          attemptsMade: delivery.attemptsMade,
        });
        if (!unchanged) return { kind: 'wait', waitMs: fifoTurnWaitMs };
      }
    }
    // The host's cap and the rate limit admit the attempt before its transformation runs, so a
    // wait costs no run; the admission asked them already when it knew the host.
    const { accountId } = subscription;
    const wanted = hostAsk(subscription);
    if (knownHosts.size >= maxKnownHosts) knownHosts.clear();
    knownHosts.set(subscription.id, wanted);
    const waitMs = await hold(wanted);
    if (waitMs > 0) return { kind: 'wait', waitMs };
    const transformed = await transformStep(deps.transformations, delivery);
    if (transformed.kind === 'wait') return transformed;
    if (transformed.kind === 'cancel') {
      await deps.store.cancel(delivery.id, cancelledByTransformation);
      return { kind: 'done', result: 'cancelled', fifo };
    }
    if (transformed.kind === 'failed') return { kind: 'sent', delivery, result: transformed.result };
    // A transformation that moved the URL to another host goes on that host's slot (its
    // `rate_limit` counted already).
    const hostname = capHost(transformed.url);
    const movedWaitMs = await hold({ hostname, accountId });
    if (movedWaitMs > 0) return { kind: 'wait', waitMs: movedWaitMs };
    const callbackUrl = new URL(transformed.url);
    const { body, headers } = buildAttemptRequest(event, subscription, new Date(), transformed.transformed);
    // A span per attempt, retries included, in the trace the job carries (the event's).
    const result = await inSpan(
      'webhooks-worker',
      'webhook attempt',
      {
        'webhook.delivery_id': delivery.id,
        'webhook.event_id': event.id,
        'webhook.subscription_id': subscription.id,
        'webhook.attempt': delivery.attemptsMade + 1,
        'server.address': hostname,
        'url.full': urlForSpan(callbackUrl),
      },
      async (annotate) => {
        const sent = await deps.authorizer.send(subscription.id, subscription.auth, (authorization) =>
          deps.sender.send(
            transformed.url,
            body,
            authorization === undefined ? headers : { ...headers, authorization },
            subscription.clientCertificate,
            { accountId, deliveryId: delivery.id },
          ),
        );
        annotate({ 'http.response.status_code': sent.statusCode, 'webhook.error': sent.errorClass });
        return sent;
      },
      SpanKind.CLIENT,
    );
    return { kind: 'sent', delivery, result };
  };

  const step = async (ref: RoundRef, expired: boolean, onConfirmed?: () => void): Promise<DeliveryStep> => {
    const { eventId, subscriptionId, round } = ref;
    if (expired) {
      await deps.store.expire({ eventId, subscriptionId, round });
      deps.log.warn(
        { eventId, subscriptionId, requestId: ref.requestId, reason: 'expired' },
        'delivery given up',
      );
      // Rare enough to look, whatever the subscription's ordering: only a FIFO one has a next head.
      return { kind: 'ended', result: 'expired', nextInOrder: true };
    }
    const inOrder = sentInOrder(ref);
    const turn = ref.needsTurn === true ? { accountId: ref.accountId, requestId: ref.requestId } : undefined;
    // The host's share is asked in the admission when the delivery was read before it (an inline
    // attempt's), or its subscription's host is known here.
    const asked = inOrder
      ? undefined
      : ref.loaded === undefined
        ? knownHosts.get(subscriptionId)
        : hostAsk(ref.loaded.subscription);
    const admission = inOrder ? oneInFlight : await deps.gate.acquire(subscriptionId, ref.jobId, turn, asked);
    if (!admission.admitted)
      return admission.inTurnList === true
        ? { kind: 'wait', waitMs: admission.waitMs, inTurnList: true }
        : { kind: 'wait', waitMs: admission.waitMs };
    const admittedAt = performance.now();
    const releases: Array<Promise<void>> = [];
    const host: { held: HeldHost } = {
      held:
        admission.host === null || asked === undefined
          ? null
          : { hostname: admission.host, accountId: asked.accountId },
    };
    /**
     * Gives the slots back, the gate's with the round's claim and the host's, in one script; no
     * release throws (a slot Redis did not get back ends with its lease). `heldMs`: how long the
     * attempt held the slot. A head sent in order, which asked no gate, gives its host's back alone.
     */
    const giveBack = (
      attempt: { signal: ReturnType<typeof congestionSignal>; sent: boolean } | null,
      heldMs = performance.now() - admittedAt,
    ) => {
      const { held } = host;
      host.held = null;
      if (!inOrder)
        releases.push(deps.gate.release(subscriptionId, ref.jobId, admission, attempt, heldMs, held));
      else if (held !== null) releases.push(deps.hostGate.release(held.hostname, held.accountId, ref.jobId));
      return Promise.all(releases);
    };
    let within: WithinSlot;
    try {
      within = await withinSlot(ref, releases, host);
    } catch (error) {
      await giveBack(null);
      throw error;
    }
    if (within.kind !== 'sent') {
      await giveBack(null);
      if (within.kind === 'wait') return within;
      return within.fifo
        ? { kind: 'ended', result: within.result, nextInOrder: true }
        : { kind: 'ended', result: within.result };
    }
    const { delivery, result } = within;
    const outcome = decideOutcome(result, delivery.attemptsMade - attemptsBeforeRound(round), {
      maxAttempts: ref.maxAttempts,
      backoffMs: deps.policy.backoffMs,
    });
    // The gate's slot goes back once the attempt is recorded, as it holds the round's claim, and
    // the host's with it; a head sent in order frees its host's slot at once.
    if (inOrder && host.held !== null) {
      releases.push(deps.hostGate.release(host.held.hostname, host.held.accountId, ref.jobId));
      host.held = null;
    }
    const heldMs = performance.now() - admittedAt;
    const attempt = {
      signal: congestionSignal(within.result),
      // A transformation that failed sent nothing: the callback's breaker does not count it.
      sent: within.result.errorClass !== 'transformation_failed',
    };

    // An ordered delivery is sent one at a time, whatever its gate's limit.
    const { inFlightLimit } = delivery.subscription.ordering === 'fifo' ? oneInFlight : admission;
    const record = { delivery, result, outcome, inFlightLimit };
    const recorded =
      ref.recordAfter === undefined
        ? deps.store.record(record)
        : ref.recordAfter.then(() => deps.store.record(record));
    if (outcome.kind === 'succeeded') onConfirmed?.();
    try {
      await recorded;
    } finally {
      await giveBack(attempt, heldMs);
    }
    observeAttempt(deps, ref, delivery, result, outcome);
    deps.metrics.attemptInFlightLimit.observe(inFlightLimit);
    // BullMQ's failed reason is the operator's (queue dashboard), so it keeps the library's detail.
    const failure = `${result.errorClass}: ${result.errorDetail ?? result.errorMessage ?? ''}`;
    return outcome.kind !== 'retry' && delivery.subscription.ordering === 'fifo'
      ? { kind: 'attempted', outcome, failure, nextInOrder: true }
      : { kind: 'attempted', outcome, failure };
  };

  /**
   * The step under its round's claim: the gate's admission takes it with the slot, and the steps
   * that do not ask the gate (a head sent in order, an expiry) take it here, unless the caller did.
   */
  const claimedStep: Deliver = async (ref, onConfirmed) => {
    const expired = isExpired(
      roundStartedAt(ref.eventId, ref.round, ref.enqueuedAt),
      Date.now(),
      deps.maxAgeMs,
    );
    const claimHere = ref.claimedAhead !== true && (expired || sentInOrder(ref));
    if (claimHere && !(await deps.claims.take(ref.jobId))) return { kind: 'wait', waitMs: claimedWaitMs };
    let done: DeliveryStep | undefined;
    try {
      done = await step(ref, expired, onConfirmed);
    } finally {
      if (claimHere || ref.claimedAhead === true) {
        const dropped = deps.claims.drop(ref.jobId);
        // A head whose successor the caller hands over next needs nothing of this claim any more
        // (it is recorded): the successor starts while the drop is on its way, in the same write.
        if (done === undefined || !handsOverNext(done)) await dropped;
      }
    }
    if (done.kind === 'ended' && done.result !== 'not_pending')
      deps.metrics.deliveries.inc({ outcome: done.result === 'expired' ? 'given_up' : done.result });
    const dueAt = parkedUntil(done, Date.now());
    if (dueAt !== null) await deps.parked.park(ref.accountId, ref.jobId, dueAt);
    return done;
  };

  return claimedStep;
}
