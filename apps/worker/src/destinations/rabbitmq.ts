/**
 * The RabbitMQ destination (amqplib): persistent, `mandatory` publishes on a connection per broker and
 * a confirm channel per account, delivered once confirmed (rabbitmq.com/docs/confirms); a nack, return,
 * closed channel or no confirm in time fails it. Exchanges are checked on a channel of their own (an
 * unknown one closes the channel, 404) and remembered.
 */
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
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

/** One account's confirm channel. */
interface AccountChannel {
  channel: ConfirmChannel;
  /** Message ids the broker returned as unroutable, until their confirmation is read. */
  returned: Set<string>;
  /** The reply code the broker closed the channel with, once it has. */
  closedWith?: unknown;
}

interface Session {
  connection: ChannelModel;
  /** Each account's channel, opened at its first publish and again after it closed. */
  channels: Map<string, Promise<AccountChannel>>;
  /** Exchanges the broker refused (403), with when they may be tried again. */
  refused: Map<string, number>;
  /** Exchanges found, with when they are checked again. */
  exchanges: Map<string, number>;
  /** Checks in flight, which the attempts to the same exchange share (a fan-out asks at once). */
  probes: Map<string, Promise<boolean>>;
}

const noop = () => {};

/** The AMQP reply code of a broker's channel or connection error, if any. */
const replyCode = (error: unknown) => (error as { code?: unknown }).code;

/** The failed attempt of an exchange the broker user may not publish to (403). */
function accessRefused(clock: PublishClock, exchange: string) {
  return clock.failed(
    'broker_refused',
    `the broker refused publishing to exchange "${exchange}" (403 access refused): the service's broker user may not write to it`,
  );
}

/** Creates the publisher of the broker at `url` (`amqp://user:password@host:port/vhost`). */
export function createRabbitMqPublisher(options: PublisherOptions): BrokerPublisher {
  const { url, timeoutMs, log } = options;
  // A lost connection or channel is opened again by the next publish.
  const session = lazyConnection<Session>(
    async (lost) => {
      const connection = await amqp.connect(url, { timeout: timeoutMs });
      connection.on('error', (error: Error) => log.warn({ err: error }, 'rabbitmq connection error'));
      connection.on('close', lost);
      return { connection, channels: new Map(), refused: new Map(), exchanges: new Map(), probes: new Map() };
    },
    (current) => current.connection.close(),
  );

  /** `accountId`'s channel, opened if need be; a closed one is forgotten, not the connection. */
  const channelOf = (current: Session, accountId: string): Promise<AccountChannel> => {
    let opened = current.channels.get(accountId);
    if (opened === undefined) {
      opened = (async () => {
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
          if (current.channels.get(accountId) === opened) current.channels.delete(accountId);
        });
        return own;
      })();
      const pending = opened;
      current.channels.set(accountId, pending);
      pending.catch(() => {
        if (current.channels.get(accountId) === pending) current.channels.delete(accountId);
      });
    }
    return opened;
  };

  /** Whether `exchange` exists: a passive declare, on a channel that may close without harm. */
  const probeExchange = async (current: Session, exchange: string) => {
    const probe = await current.connection.createChannel();
    probe.on('error', noop);
    try {
      await probe.checkExchange(exchange);
      current.exchanges.set(exchange, Date.now() + knownExchangeMs);
      return true;
    } catch (error) {
      if (replyCode(error) === 404) return false;
      throw error;
    } finally {
      // A 404 has closed it already.
      probe.close().catch(noop);
    }
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
          try {
            own = await channelOf(current, accountId);
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
          }
        },
      );
    },
    close: () => session.close(),
  };
}
