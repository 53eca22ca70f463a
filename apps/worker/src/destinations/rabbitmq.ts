/**
 * The RabbitMQ destination (amqplib): persistent, `mandatory` publishes on a connection per broker and
 * a confirm channel per account, delivered once confirmed (rabbitmq.com/docs/confirms); a nack, return,
 * closed channel or no confirm in time fails it. Account channels are kept least recently used first,
 * at most {@link defaultMaxChannels} (and half the broker's `channel_max`), and closed once idle.
 * Exchanges are checked one at a time on one reserved channel (an unknown one closes it, 404; it is
 * opened again) and remembered.
 */
import { hostname } from 'node:os';
import amqp, { type Channel, type ChannelModel, type ConfirmChannel } from 'amqplib';
import type { BrokerTarget } from '@webhooks/shared';
import {
  lazyConnection,
  publishClock,
  publishWithin,
  type BrokerPublisher,
  type PublishClock,
  type PublisherOptions,
} from './publisher.js';

/** How long an exchange found on the broker is published to without checking it again, in ms. */
export const knownExchangeMs = 60_000;

/** Most account channels one connection keeps open (RabbitMQ's default `channel_max` is 2047). */
export const defaultMaxChannels = 256;

/** How long an account's channel stays open with no publish, in ms. */
export const defaultChannelIdleMs = 60_000;

/** One account's confirm channel. */
interface AccountChannel {
  channel: ConfirmChannel;
  /** Message ids the broker returned as unroutable, until their confirmation is read. */
  returned: Set<string>;
  /** The reply code the broker closed the channel with, once it has. */
  closedWith?: unknown;
}

/** An account's place in the channel list: its channel (once open), its publishes in flight, its last use. */
interface ChannelSlot {
  opened: Promise<AccountChannel>;
  own?: AccountChannel;
  inFlight: number;
  lastUsedMs: number;
}

interface Session {
  connection: ChannelModel;
  /** Each account's channel, least recently used first; opened at its first publish and again after it closed. */
  channels: Map<string, ChannelSlot>;
  /** The most kept open: the option, and at most half the broker's `channel_max`. */
  maxChannels: number;
  /** The reserved channel exchanges are checked on, while open. */
  checker: Promise<Channel> | null;
  /** The check in progress: checks run one after another on the reserved channel. */
  checking: Promise<unknown>;
  /** Closes idle account channels. */
  sweeper: NodeJS.Timeout;
  /** Exchanges the broker refused (403), with when they may be tried again. */
  refused: Map<string, number>;
  /** Exchanges found, with when they are checked again. */
  exchanges: Map<string, number>;
  /** Checks in flight, which the attempts to the same exchange share (a fan-out asks at once). */
  probes: Map<string, Promise<boolean>>;
}

const noop = () => {};

/** The `channel_max` the broker and amqplib agreed on (amqplib's Connection keeps it untyped). */
const channelMaxOf = (connection: ChannelModel) =>
  (connection.connection as unknown as { channelMax: number }).channelMax;

/** The AMQP reply code of a broker's channel or connection error, if any. */
const replyCode = (error: unknown) => (error as { code?: unknown }).code;

/** The failed attempt of an exchange the broker user may not publish to (403). */
function accessRefused(clock: PublishClock, exchange: string) {
  return clock.failed(
    'broker_refused',
    `the broker refused publishing to exchange "${exchange}" (403 access refused): the service's broker user may not write to it`,
  );
}

/** Bounds of the account channels; the defaults are {@link defaultMaxChannels} and {@link defaultChannelIdleMs}. */
export interface ChannelBounds {
  maxChannels?: number;
  /** In ms. */
  channelIdleMs?: number;
}

/** Creates the publisher of the broker at `url` (`amqp://user:password@host:port/vhost`). */
export function createRabbitMqPublisher(options: PublisherOptions & ChannelBounds): BrokerPublisher {
  const { url, timeoutMs, log } = options;
  const idleMs = options.channelIdleMs ?? defaultChannelIdleMs;
  // A lost connection or channel is opened again by the next publish.
  const session = lazyConnection<Session>(
    async (lost) => {
      // Named so that the broker's connection list says which worker holds it.
      const connection = await amqp.connect(url, {
        timeout: timeoutMs,
        clientProperties: { connection_name: `webhooks-worker ${hostname()}:${process.pid}` },
      });
      const current: Session = {
        connection,
        channels: new Map(),
        maxChannels: Math.min(
          options.maxChannels ?? defaultMaxChannels,
          Math.floor(channelMaxOf(connection) / 2),
        ),
        checker: null,
        checking: Promise.resolve(),
        sweeper: setInterval(() => closeIdle(current), Math.max(10, Math.floor(idleMs / 2))).unref(),
        refused: new Map(),
        exchanges: new Map(),
        probes: new Map(),
      };
      connection.on('error', (error: Error) => log.warn({ err: error }, 'rabbitmq connection error'));
      connection.on('close', () => {
        clearInterval(current.sweeper);
        lost();
      });
      return current;
    },
    (current) => {
      clearInterval(current.sweeper);
      return current.connection.close();
    },
  );

  /** Closes `accountId`'s channel, which no publish uses; the next publish opens another. */
  const closeChannel = (current: Session, accountId: string, slot: ChannelSlot) => {
    current.channels.delete(accountId);
    slot.own?.channel.close().catch(noop);
  };

  /** Closes the channels unused for `idleMs`. */
  const closeIdle = (current: Session) => {
    const now = Date.now();
    for (const [accountId, slot] of current.channels)
      if (slot.own !== undefined && slot.inFlight === 0 && now - slot.lastUsedMs >= idleMs)
        closeChannel(current, accountId, slot);
  };

  /** Closes the least recently used idle channels past the bound. */
  const trim = (current: Session) => {
    let over = current.channels.size - current.maxChannels;
    for (const [accountId, slot] of current.channels) {
      if (over <= 0) break;
      if (slot.own === undefined || slot.inFlight > 0) continue;
      closeChannel(current, accountId, slot);
      over -= 1;
    }
  };

  /**
   * `accountId`'s channel slot, its channel opened if need be and marked in use (`release` it); a
   * closed channel is forgotten, not the connection.
   */
  const acquire = (current: Session, accountId: string): ChannelSlot => {
    let slot = current.channels.get(accountId);
    if (slot !== undefined) current.channels.delete(accountId);
    else {
      // `opened` is set below: its channel's close handler compares the slot.
      const created = { inFlight: 0, lastUsedMs: Date.now() } as ChannelSlot;
      created.opened = (async () => {
        const channel = await current.connection.createConfirmChannel();
        const own: AccountChannel = { channel, returned: new Set() };
        channel.on('return', (message) => {
          const id = message.properties.messageId as string | undefined;
          if (id !== undefined) own.returned.add(id);
        });
        channel.on('error', (error: Error) => {
          own.closedWith = replyCode(error);
          log.warn({ err: error, accountId }, 'rabbitmq channel error');
        });
        channel.on('close', () => {
          if (current.channels.get(accountId) === created) current.channels.delete(accountId);
        });
        created.own = own;
        return own;
      })();
      slot = created;
      created.opened.catch(() => {
        if (current.channels.get(accountId) === created) current.channels.delete(accountId);
      });
    }
    // Last in the map: the most recently used.
    current.channels.set(accountId, slot);
    slot.inFlight += 1;
    slot.lastUsedMs = Date.now();
    return slot;
  };

  const release = (current: Session, slot: ChannelSlot) => {
    slot.inFlight -= 1;
    slot.lastUsedMs = Date.now();
    trim(current);
  };

  /** The reserved channel of exchange checks, opened if need be. */
  const checkerOf = (current: Session): Promise<Channel> => {
    if (current.checker === null) {
      const opening = current.connection.createChannel().then((channel) => {
        channel.on('error', noop);
        channel.on('close', () => {
          if (current.checker === opening) current.checker = null;
        });
        return channel;
      });
      current.checker = opening;
      opening.catch(() => {
        if (current.checker === opening) current.checker = null;
      });
    }
    return current.checker;
  };

  /** Whether `exchange` exists: a passive declare on the reserved channel, after the checks before it. */
  const probeExchange = (current: Session, exchange: string): Promise<boolean> => {
    const check = current.checking.then(async () => {
      const checker = checkerOf(current);
      const channel = await checker;
      try {
        await channel.checkExchange(exchange);
        current.exchanges.set(exchange, Date.now() + knownExchangeMs);
        return true;
      } catch (error) {
        // A 404 closed the channel: the next check opens another.
        if (current.checker === checker) current.checker = null;
        if (replyCode(error) === 404) return false;
        throw error;
      }
    });
    current.checking = check.catch(noop);
    return check;
  };

  const exchangeExists = (current: Session, exchange: string): Promise<boolean> => {
    if (exchange === '' || (current.exchanges.get(exchange) ?? 0) > Date.now()) return Promise.resolve(true);
    let probe = current.probes.get(exchange);
    if (probe === undefined) {
      probe = probeExchange(current, exchange).finally(() => current.probes.delete(exchange));
      current.probes.set(exchange, probe);
    }
    return probe;
  };

  return {
    async publish(target: BrokerTarget, body, headers, { accountId, deliveryId: messageId }) {
      const clock = publishClock();
      if (target.type !== 'rabbitmq') return clock.failed('other', 'not a rabbitmq destination');
      const refusedUntil = (current: Session) => current.refused.get(target.exchange) ?? 0;
      return publishWithin(
        session,
        timeoutMs,
        clock,
        'the broker did not confirm the message in time',
        async (current) => {
          if (refusedUntil(current) > Date.now()) return accessRefused(clock, target.exchange);
          let own: AccountChannel | undefined;
          const slot = acquire(current, accountId);
          try {
            own = await slot.opened;
            const { channel, returned } = own;
            if (!(await exchangeExists(current, target.exchange)))
              return clock.failed('broker_refused', `the broker has no exchange named "${target.exchange}"`);
            const timestamp = Number(headers['webhook-timestamp']);
            await new Promise<void>((resolve, reject) => {
              channel.publish(
                target.exchange,
                target.routingKey,
                Buffer.from(body),
                {
                  persistent: true,
                  mandatory: true,
                  contentType: 'application/json',
                  messageId,
                  ...(Number.isFinite(timestamp) ? { timestamp } : {}),
                  headers,
                },
                (error: unknown) => (error ? reject(error) : resolve()),
              );
            });
            if (returned.delete(messageId))
              return clock.failed(
                'broker_unroutable',
                `the broker routed the message to no queue: nothing is bound to exchange "${target.exchange}" for routing key "${target.routingKey}"`,
              );
            return clock.confirmed();
          } catch (error) {
            own?.returned.delete(messageId);
            if (replyCode(error) === 403 || own?.closedWith === 403) {
              current.refused.set(target.exchange, Date.now() + knownExchangeMs);
              return accessRefused(clock, target.exchange);
            }
            return clock.failed('broker_refused', 'the broker did not confirm the message', error);
          } finally {
            release(current, slot);
          }
        },
      );
    },
    close: () => session.close(),
  };
}
