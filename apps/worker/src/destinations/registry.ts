/**
 * The one place choosing how an attempt is sent: http(s) to the HTTP sender, a broker destination to
 * its publisher, `cli` to the relay. A new type is a publisher and one {@link publisherFactories} entry.
 */
import {
  brokerAllows,
  brokerNameRefusal,
  brokerTarget,
  relaySession,
  type BrokerConfig,
  type BrokerKind,
} from '@webhooks/shared';
import type { AttemptSender } from '../delivery/attempt.js';
import { publishClock, type BrokerPublisher, type PublisherOptions } from './publisher.js';
import { createNatsPublisher } from './nats.js';
import { createRabbitMqPublisher } from './rabbitmq.js';
import { createAwsPublisher } from './aws.js';
import type { RelaySender } from './relay.js';

/** The publisher of each kind of broker entry. */
export const publisherFactories: Record<BrokerKind, (options: PublisherOptions) => BrokerPublisher> = {
  rabbitmq: createRabbitMqPublisher,
  nats: createNatsPublisher,
  aws: createAwsPublisher,
};

/** One publisher per broker of DESTINATION_BROKERS; each connects at its first publish. */
export function createBrokerPublishers(
  brokers: ReadonlyMap<string, BrokerConfig>,
  options: Omit<PublisherOptions, 'url'>,
): Map<string, BrokerPublisher> {
  return new Map(
    [...brokers].map(([name, broker]) => [
      name,
      publisherFactories[broker.type]({
        ...options,
        url: broker.url,
        ...(broker.region === undefined ? {} : { region: broker.region }),
        log: options.log.child({ broker: name }),
      }),
    ]),
  );
}

/**
 * The sender for every destination. A broker unknown to this worker, no longer allowed to the account,
 * or refusing the exchange or subject (DESTINATION_BROKERS changed) fails the attempt, saying so.
 */
export function createDestinationSender(
  http: AttemptSender,
  brokers: ReadonlyMap<string, BrokerConfig>,
  publishers: ReadonlyMap<string, BrokerPublisher>,
  relay: RelaySender,
): AttemptSender {
  return {
    fetch: (url, init) => http.fetch(url, init),
    send(url, body, headers, clientCertificate, delivery) {
      const session = relaySession(url);
      if (session !== null) return relay.send(session, body, headers);
      const target = brokerTarget(url);
      if (target === null) return http.send(url, body, headers, clientCertificate);
      const broker = brokers.get(target.broker);
      const publisher = publishers.get(target.broker);
      if (
        broker === undefined ||
        publisher === undefined ||
        delivery === undefined ||
        !brokerAllows(broker, delivery.accountId)
      )
        return Promise.resolve(
          publishClock().failed(
            'broker_unavailable',
            `this deployment has no broker named "${target.broker}" for this account (DESTINATION_BROKERS)`,
          ),
        );
      const refused = brokerNameRefusal(target, broker);
      if (refused !== null)
        return Promise.resolve(
          publishClock().failed(
            'broker_refused',
            `this deployment refuses the destination: its ${refused.pointer.slice('/destination/'.length)} ${refused.detail}`,
          ),
        );
      return publisher.publish(target, body, headers, delivery);
    },
    close() {
      http.close();
      relay.close();
      for (const publisher of publishers.values()) void publisher.close();
    },
  };
}
