/**
 * The RabbitMQ destination (amqplib): each message is published persistent and `mandatory` to its
 * exchange with its routing key, on one confirm channel per broker, and counts as delivered once
 * the broker confirms it (publisher confirms, https://www.rabbitmq.com/docs/confirms). A nack, a
 * message the broker returns because no queue is bound for its routing key (a `basic.return`
 * comes before the `basic.ack`), a closed channel or no confirmation within DELIVERY_TIMEOUT_MS
 * fail the attempt, which BullMQ retries.
 *
 * Publishing to an exchange that does not exist closes the channel (404), which would fail every
 * other subscription's message in flight on it: so an exchange is first checked on a channel of
 * its own (`checkExchange`), and known ones are remembered for {@link knownExchangeMs}.
 */
import amqp, { type ChannelModel, type ConfirmChannel } from 'amqplib';
import type { BrokerTarget } from '@webhooks/shared';
import {
  lazyConnection,
  publishClock,
  publishWithin,
  type BrokerPublisher,
  type PublisherOptions,
} from './publisher.js';

/** How long an exchange found on the broker is published to without checking it again, in ms. */
export const knownExchangeMs = 60_000;

interface Session {
  connection: ChannelModel;
  channel: ConfirmChannel;
  /** Message ids the broker returned as unroutable, until their confirmation is read. */
  returned: Set<string>;
  /** Exchanges found, with when they are checked again. */
  exchanges: Map<string, number>;
  /** Checks in flight, which the attempts to the same exchange share (a fan-out asks at once). */
  probes: Map<string, Promise<boolean>>;
}

const noop = () => {};

/** The AMQP reply code of a broker's channel or connection error, if any. */
const replyCode = (error: unknown) => (error as { code?: unknown }).code;

/** Creates the publisher of the broker at `url` (`amqp://user:password@host:port/vhost`). */
export function createRabbitMqPublisher(options: PublisherOptions): BrokerPublisher {
  const { url, timeoutMs, log } = options;
  // A lost connection or channel is opened again by the next publish.
  const session = lazyConnection<Session>(
    async (lost) => {
      const connection = await amqp.connect(url, { timeout: timeoutMs });
      connection.on('error', (error: Error) => log.warn({ err: error }, 'rabbitmq connection error'));
      connection.on('close', lost);
      const channel = await connection.createConfirmChannel();
      const returned = new Set<string>();
      channel.on('return', (message) => {
        const id = message.properties.messageId as string | undefined;
        if (id !== undefined) returned.add(id);
      });
      channel.on('error', (error: Error) => log.warn({ err: error }, 'rabbitmq channel error'));
      channel.on('close', () => {
        lost();
        connection.close().catch(noop);
      });
      return { connection, channel, returned, exchanges: new Map(), probes: new Map() };
    },
    (current) => current.connection.close(),
  );

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
    async publish(target: BrokerTarget, body, headers) {
      const clock = publishClock();
      if (target.type !== 'rabbitmq') return clock.failed('other', 'not a rabbitmq destination');
      const messageId = headers['webhook-id'] ?? '';
      return publishWithin(
        session,
        timeoutMs,
        clock,
        'the broker did not confirm the message in time',
        async (current) => {
          try {
            if (!(await exchangeExists(current, target.exchange)))
              return clock.failed('broker_refused', `the broker has no exchange named "${target.exchange}"`);
            const timestamp = Number(headers['webhook-timestamp']);
            await new Promise<void>((resolve, reject) => {
              current.channel.publish(
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
            if (current.returned.delete(messageId))
              return clock.failed(
                'broker_unroutable',
                `the broker routed the message to no queue: nothing is bound to exchange "${target.exchange}" for routing key "${target.routingKey}"`,
              );
            return clock.confirmed();
          } catch (error) {
            current.returned.delete(messageId);
            return clock.failed('broker_refused', 'the broker did not confirm the message', error);
          }
        },
      );
    },
    close: () => session.close(),
  };
}
