/**
 * The NATS destination (@nats-io/jetstream): delivered once JetStream acknowledges it stored
 * (docs.nats.io, "Acknowledgement Models"). `Nats-Msg-Id` is the delivery id, so the retry of a stored
 * message whose ack was lost is dropped as a duplicate. No stream, an error or no ack in time fails it.
 */
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import type { BrokerTarget } from '@webhooks/shared';
import {
  lazyConnection,
  publishClock,
  publishWithin,
  type BrokerPublisher,
  type PublisherOptions,
} from './publisher.js';

interface Session {
  connection: NatsConnection;
  js: JetStreamClient;
}

/** Whether a publish error says no stream stores the subject ("no responders", `JetStreamNotEnabled`). */
function noStream(error: unknown): boolean {
  for (let e = error as { name?: unknown; cause?: unknown } | undefined; e; e = e.cause as typeof e) {
    if (e.name === 'NoResponders' || e.name === 'JetStreamNotEnabled') return true;
  }
  return false;
}

/** Creates the publisher of the server at `url` (`nats://host:port`, `user:password@` allowed). */
export function createNatsPublisher(options: PublisherOptions): BrokerPublisher {
  const { url, timeoutMs, log } = options;
  const session = lazyConnection<Session>(
    async (lost) => {
      const connection = await connect({
        servers: url,
        timeout: timeoutMs,
        name: 'webhooks-worker',
        // Reconnects for as long as the worker runs; publishes meanwhile wait for their deadline.
        maxReconnectAttempts: -1,
        reconnectTimeWait: 500,
      });
      void connection.closed().then((error) => {
        if (error) log.warn({ err: error }, 'nats connection closed');
        lost();
      });
      return { connection, js: jetstream(connection, { timeout: timeoutMs }) };
    },
    (current) => current.connection.close(),
  );

  return {
    async publish(target: BrokerTarget, body, headers, { deliveryId }) {
      const clock = publishClock();
      if (target.type !== 'nats') return clock.failed('other', 'not a nats destination');
      return publishWithin(
        session,
        timeoutMs,
        clock,
        'JetStream did not acknowledge the message in time',
        async (current) => {
          const messageHeaders = natsHeaders();
          for (const [name, value] of Object.entries(headers)) messageHeaders.set(name, value);
          try {
            await current.js.publish(target.subject, body, {
              msgID: deliveryId,
              headers: messageHeaders,
              timeout: clock.remainingMs(timeoutMs),
            });
            return clock.confirmed();
          } catch (error) {
            if (noStream(error))
              return clock.failed(
                'broker_refused',
                `no JetStream stream stores subject "${target.subject}"`,
                error,
              );
            return clock.failed('broker_refused', 'JetStream did not acknowledge the message', error);
          }
        },
      );
    },
    close: () => session.close(),
  };
}
