/**
 * The publisher of an `aws` broker entry: one write per attempt to SQS, SNS, EventBridge, Kinesis or
 * S3 (`aws-writes.ts`), delivered once the service accepts it; its failures named by `aws-errors.ts`.
 * Credentials come from the SDK's default chain (environment, web identity, instance or task role).
 * The SDK tries once: the attempt is retried with the delivery's backoff.
 */
import { GetQueueUrlCommand, SQSClient } from '@aws-sdk/client-sqs';
import { SNSClient } from '@aws-sdk/client-sns';
import { EventBridgeClient } from '@aws-sdk/client-eventbridge';
import { KinesisClient } from '@aws-sdk/client-kinesis';
import { S3Client } from '@aws-sdk/client-s3';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { isAwsType, type AwsTarget, type BrokerTarget } from '@webhooks/shared';
import { publishClock, publishWithin, type BrokerPublisher, type PublisherOptions } from './publisher.js';
import { awsErrorName, awsFailure } from './aws-errors.js';
import { awsWrite, type AwsClients } from './aws-writes.js';

/** How long a queue's URL is used without asking again, in ms. */
const knownQueueMs = 60_000;

/** Queue URLs kept at most, across accounts; the oldest goes first (a miss costs one GetQueueUrl). */
const maxKnownQueues = 1_000;

/** Creates the publisher of an `aws` broker in `region`, at endpoint `url` when set (else the SDK's own). */
export function createAwsPublisher(options: PublisherOptions): BrokerPublisher {
  const { url, timeoutMs, log } = options;
  const region = options.region ?? 'us-east-1';
  const settings = {
    region,
    ...(url === '' ? {} : { endpoint: url }),
    maxAttempts: 1,
    requestHandler: { requestTimeout: timeoutMs },
  };
  const made = new Map<string, { destroy(): void }>();
  const client =
    <C extends { destroy(): void }>(name: string, make: () => C) =>
    (): C => {
      let found = made.get(name) as C | undefined;
      if (found === undefined) {
        found = make();
        made.set(name, found);
      }
      return found;
    };
  const queues = new Map<string, { url: string; until: number }>();
  const clients: AwsClients = {
    sqs: client('sqs', () => new SQSClient(settings)),
    sns: client('sns', () => new SNSClient(settings)),
    eventBridge: client('eventbridge', () => new EventBridgeClient(settings)),
    // Its default handler speaks HTTP/2 (for SubscribeToShard), which an http:// endpoint does not;
    // PutRecord needs none of it.
    kinesis: client(
      'kinesis',
      () =>
        new KinesisClient({
          ...settings,
          requestHandler: new NodeHttpHandler({ requestTimeout: timeoutMs }),
        }),
    ),
    // An endpoint of the operator's (a local S3, moto) is addressed by path, not by a bucket's host name.
    s3: client('s3', () => new S3Client({ ...settings, forcePathStyle: url !== '' })),
    async queueUrl(name, abortSignal) {
      const known = queues.get(name);
      if (known !== undefined && known.until > Date.now()) return known.url;
      const answer = await clients.sqs().send(new GetQueueUrlCommand({ QueueName: name }), { abortSignal });
      const found = answer.QueueUrl ?? '';
      queues.delete(name);
      queues.set(name, { url: found, until: Date.now() + knownQueueMs });
      if (queues.size > maxKnownQueues) queues.delete(queues.keys().next().value!);
      return found;
    },
  };
  const session = { get: () => Promise.resolve(null) };

  return {
    async publish(target: BrokerTarget, body, headers, delivery) {
      const clock = publishClock();
      if (!isAwsType(target.type)) return clock.failed('other', 'not an aws destination');
      const write = awsWrite(target as AwsTarget, body, headers, delivery, clients);
      if ('refused' in write) return clock.failed('broker_refused', write.refused);
      const controller = new AbortController();
      const result = await publishWithin(
        session,
        timeoutMs,
        clock,
        `${write.service} did not accept the write in time`,
        async () => {
          try {
            await write.send(controller.signal);
            return clock.confirmed();
          } catch (error) {
            if (target.type === 'sqs') queues.delete(target.queue);
            log.debug({ err: error, service: write.service, name: write.name }, 'aws write failed');
            const failed = awsFailure(awsErrorName(error), { ...write, region });
            return clock.failed(failed.errorClass, failed.message, error);
          }
        },
      );
      // An attempt past its deadline stops its request.
      controller.abort();
      return result;
    },
    close: async () => {
      for (const opened of made.values()) opened.destroy();
    },
  };
}
