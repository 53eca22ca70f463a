/**
 * What an AWS destination costs: fan-out 1 → 100 to an SQS queue and to an S3 bucket on moto (a
 * `moto_server` of this run's own), each on a stack of its own. moto is far slower than AWS, so the
 * same run measures its ceiling: the SDK writing to it directly, as many at once as a worker sends
 * (WORKER_CONCURRENCY's default), with no service in between.
 */
import { CreateQueueCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs';
import { CreateBucketCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import {
  deliveryThroughput,
  type DeliveryLoad,
  type DeliveryThroughput,
  type Progress,
} from './delivery-scenarios.js';
import { startMoto } from '../scripts/lib/moto.js';

const region = 'eu-west-1';

/** Writes in flight at once for the ceiling: a worker's WORKER_CONCURRENCY default. */
const ceilingConcurrency = 50;

/** Deliveries/s to each AWS type, and moto's own writes/s for it. */
export interface AwsDestinationCost {
  sqs: DeliveryThroughput;
  sqsCeiling: number;
  s3: DeliveryThroughput;
  s3Ceiling: number;
}

/** Writes/s of `writes` calls of `write` (given its index), {@link ceilingConcurrency} at once. */
async function ceiling(writes: number, write: (n: number) => Promise<unknown>): Promise<number> {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: ceilingConcurrency }, async () => {
      for (let n = next++; n < writes; n = next++) await write(n);
    }),
  );
  return writes / ((performance.now() - started) / 1000);
}

/** Runs the fan-out of `events` events to 100 subscriptions of each AWS type, and moto's ceilings. */
export async function awsDestinationCost(events: number, progress: Progress): Promise<AwsDestinationCost> {
  const moto = await startMoto();
  const settings = { region, endpoint: moto.url };
  const sqs = new SQSClient(settings);
  const s3 = new S3Client({ ...settings, forcePathStyle: true });
  try {
    const queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'bench' }))).QueueUrl!;
    await s3.send(
      new CreateBucketCommand({ Bucket: 'bench', CreateBucketConfiguration: { LocationConstraint: region } }),
    );
    const env = { DESTINATION_BROKERS: JSON.stringify({ aws: { type: 'aws', region, endpoint: moto.url } }) };
    const load = (destination: Record<string, string>): DeliveryLoad => ({
      events,
      accounts: 1,
      subscriptions: 100,
      fields: { callback_url: undefined, destination },
    });
    const writes = events * 100;
    const body = JSON.stringify({ type: 'call.started', data: { n: 0 } });
    const sqsRun = await deliveryThroughput(
      'fan-out sqs',
      load({ type: 'sqs', broker: 'aws', queue: 'bench' }),
      progress,
      env,
    );
    const sqsCeiling = await ceiling(writes, (n) =>
      sqs.send(
        new SendMessageCommand({
          QueueUrl: queueUrl,
          MessageBody: body,
          MessageAttributes: { n: { DataType: 'String', StringValue: String(n) } },
        }),
      ),
    );
    const s3Run = await deliveryThroughput(
      'fan-out s3',
      load({ type: 's3', broker: 'aws', bucket: 'bench' }),
      progress,
      env,
    );
    const s3Ceiling = await ceiling(writes, (n) =>
      s3.send(
        new PutObjectCommand({
          Bucket: 'bench',
          Key: `ceiling/${n}.json`,
          Body: body,
          ContentType: 'application/json',
        }),
      ),
    );
    return { sqs: sqsRun, sqsCeiling, s3: s3Run, s3Ceiling };
  } finally {
    sqs.destroy();
    s3.destroy();
    await moto.stop();
  }
}
