import { describe, expect, it } from '@jest/globals';
import { v7 as uuidv7 } from 'uuid';
import { deliveryJobId, subscriptionOfDeliveryJob } from '../src/queues.js';

describe('the subscription of a delivery job id', () => {
  it('is read back from the ids of a first round and of a retry round', () => {
    const [eventId, subscriptionId] = [uuidv7(), uuidv7()];
    expect(subscriptionOfDeliveryJob(deliveryJobId(eventId, subscriptionId))).toBe(subscriptionId);
    expect(subscriptionOfDeliveryJob(deliveryJobId(eventId, subscriptionId, 3))).toBe(subscriptionId);
  });

  it('is null for ids of other jobs', () => {
    const [eventId, subscriptionId] = [uuidv7(), uuidv7()];
    for (const id of [
      `verification:${subscriptionId}`,
      eventId,
      `${eventId}.not-a-uuid`,
      `${eventId}.${subscriptionId}.x2`,
      `${eventId}.${subscriptionId}.r1.extra`,
    ])
      expect(subscriptionOfDeliveryJob(id)).toBeNull();
  });
});
