/**
 * What a broker destination costs against an HTTP callback: fan-out 1 → 100 to a RabbitMQ exchange
 * (publisher confirms) and to a NATS JetStream subject (acknowledged publishes), each on a stack of
 * its own, against the same fan-out to the bench's HTTP receiver. The brokers are the machine's
 * (RabbitMQ on 5672, NATS with JetStream on 4222), on an exchange, queue and stream of this run's
 * own, removed after.
 */
import { randomUUID } from 'node:crypto';
import amqp from 'amqplib';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import {
  deliveryThroughput,
  type DeliveryLoad,
  type DeliveryThroughput,
  type Progress,
} from './delivery-scenarios.js';

const rabbitUrl = 'amqp://guest:guest@127.0.0.1:5672';
const natsUrl = 'nats://127.0.0.1:4222';

/** Deliveries/s of the fan-out to each destination type. */
export interface DestinationCost {
  http: DeliveryThroughput;
  rabbitmq: DeliveryThroughput;
  nats: DeliveryThroughput;
}

/** Runs the fan-out of `events` events to 100 subscriptions once per destination type. */
export async function destinationCost(events: number, progress: Progress): Promise<DestinationCost> {
  const run = randomUUID().slice(0, 8);
  const name = `wh-bench-${run}`;
  const load: DeliveryLoad = { events, accounts: 1, subscriptions: 100 };
  const env = {
    DESTINATION_BROKERS: JSON.stringify({
      rabbit: { type: 'rabbitmq', url: rabbitUrl },
      nats: { type: 'nats', url: natsUrl },
    }),
  };
  const rabbit = await amqp.connect(rabbitUrl);
  const channel = await rabbit.createChannel();
  const nats = await connect({ servers: natsUrl });
  const jsm = await jetstreamManager(nats);
  try {
    await channel.assertExchange(name, 'direct', { durable: true });
    await channel.assertQueue(name, { durable: true });
    await channel.bindQueue(name, name, 'bench');
    await jsm.streams.add({ name: `WH_BENCH_${run}`, subjects: [`${name}.>`] });
    const http = await deliveryThroughput('fan-out http', load, progress, env);
    const rabbitmq = await deliveryThroughput(
      'fan-out rabbitmq',
      {
        ...load,
        fields: {
          callback_url: undefined,
          destination: { type: 'rabbitmq', broker: 'rabbit', exchange: name, routing_key: 'bench' },
        },
      },
      progress,
      env,
    );
    const natsRun = await deliveryThroughput(
      'fan-out nats',
      {
        ...load,
        fields: {
          callback_url: undefined,
          destination: { type: 'nats', broker: 'nats', subject: `${name}.bench` },
        },
      },
      progress,
      env,
    );
    return { http, rabbitmq, nats: natsRun };
  } finally {
    await channel.deleteQueue(name).catch(() => undefined);
    await channel.deleteExchange(name).catch(() => undefined);
    await rabbit.close();
    await jsm.streams.delete(`WH_BENCH_${run}`).catch(() => undefined);
    await nats.close();
  }
}
