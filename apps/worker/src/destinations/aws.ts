/**
 * The publisher of an `aws` broker entry: one write per attempt to SQS, SNS, EventBridge, Kinesis or
 * S3 (`aws-writes.ts`), delivered once the service accepts it; its failures named by `aws-errors.ts`.
 * It writes as the deployment (the SDK's default chain: environment, web identity, instance or task
 * role) or, for a subscription naming customer-owned credentials, as the customer (`aws-clients.ts`).
 */
import { isAwsType, type AwsTarget, type BrokerTarget } from '@webhooks/shared';
import { publishClock, publishWithin, type BrokerPublisher, type PublisherOptions } from './publisher.js';
import { awsErrorName, awsFailure } from './aws-errors.js';
import { awsWrite } from './aws-writes.js';
import { createAwsClients, RoleAssumptionError, type AwsClientSet } from './aws-clients.js';
import type { DeliveryRef } from '../delivery/attempt.js';
import {
  createCustomerClients,
  customerClientBounds,
  type CustomerClientBounds,
} from './customer-clients.js';

/**
 * Creates the publisher of an `aws` broker in `region`, at endpoint `url` when set (else the SDK's
 * own); `bounds` limit the clients kept for customer-owned credentials ({@link customerClientBounds}).
 */
export function createAwsPublisher(
  options: PublisherOptions,
  bounds: CustomerClientBounds = customerClientBounds,
): BrokerPublisher {
  const { url, timeoutMs, log } = options;
  const region = options.region ?? 'us-east-1';
  const settings = { region, endpoint: url, timeoutMs };
  const deployment = createAwsClients(settings, null, '');
  const customers = createCustomerClients(
    (credentials, subscriptionId) => createAwsClients(settings, credentials, subscriptionId),
    // A set let go may still carry an attempt: it is destroyed once that attempt has ended.
    (clients) => setTimeout(() => clients.destroy(), timeoutMs + 1_000).unref(),
    bounds,
  );
  const clientsOf = (delivery: DeliveryRef): AwsClientSet =>
    delivery.awsCredentials == null
      ? deployment
      : customers.get(delivery.accountId, delivery.subscriptionId, delivery.awsCredentials);
  const session = { get: () => Promise.resolve(null) };

  return {
    async publish(target: BrokerTarget, body, headers, delivery) {
      const clock = publishClock();
      if (!isAwsType(target.type)) return clock.failed('other', 'not an aws destination');
      const clients = clientsOf(delivery);
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
            if (target.type === 'sqs') clients.forgetQueue(target.queue);
            log.debug({ err: error, service: write.service, name: write.name }, 'aws write failed');
            const failed =
              error instanceof RoleAssumptionError
                ? roleFailure(error)
                : awsFailure(awsErrorName(error), { ...write, region });
            return clock.failed(failed.errorClass, failed.message, error);
          }
        },
      );
      // An attempt past its deadline stops its request.
      controller.abort();
      return result;
    },
    close: async () => {
      deployment.destroy();
      customers.close();
    },
  };
}

/** The failed attempt of a role that could not be assumed. */
function roleFailure(error: RoleAssumptionError) {
  const sts = awsFailure(error.code, { service: 'STS', resource: 'role', name: error.roleArn, region: '' });
  if (sts.errorClass !== 'broker_refused') return sts;
  return {
    errorClass: sts.errorClass,
    message: `STS refused to assume role "${error.roleArn}" (${error.code}): its trust policy must allow this service with the subscription's external id`,
  };
}
