/** Which days of the delivery log are created ahead and which retention drops (pure rules). */
import { describe, expect, it } from '@jest/globals';
import { timeIdRange } from '@webhooks/shared';
import { daysToCreate, expiredDays, utcDay } from '../src/log-partitions.js';

describe('delivery log partition days', () => {
  it('creates today and the days ahead, in UTC, across a month end', () => {
    expect(daysToCreate(new Date('2026-11-29T23:30:00+00:00'), 3)).toEqual([
      '2026-11-29',
      '2026-11-30',
      '2026-12-01',
      '2026-12-02',
    ]);
    // 01:00 in UTC+2 is still the day before in UTC.
    expect(utcDay(new Date('2026-12-01T01:00:00+02:00'))).toBe('2026-11-30');
  });

  it('drops a day only once all of it is older than the cutoff', () => {
    const days = ['2026-10-22', '2026-10-23', '2026-10-24', '2026-10-25'];
    expect(expiredDays(days, new Date('2026-10-24T00:00:00.000Z'))).toEqual(['2026-10-22', '2026-10-23']);
    expect(expiredDays(days, new Date('2026-10-23T23:59:59.999Z'))).toEqual(['2026-10-22']);
    expect(expiredDays(days, new Date('2026-10-01T00:00:00.000Z'))).toEqual([]);
  });

  it("bounds a batch's ids by their times, whatever their case and order", () => {
    const ids = [
      '019ab5a0-1c2e-7d3f-8a1b-2c3d4e5f6a7b',
      '019AB59F-FFFF-7000-8000-000000000000',
      '019ab5a0-1c30-7aaa-9bbb-cccccccccccc',
    ];
    const [low, high] = timeIdRange(ids);
    expect([low, high]).toEqual([
      '019ab59f-ffff-0000-0000-000000000000',
      '019ab5a0-1c30-ffff-ffff-ffffffffffff',
    ]);
    // A delivery of the earliest event (its id keeps only the event's time) is inside the range.
    expect('019ab59f-ffff-8123-8456-0123456789ab' >= low).toBe(true);
    expect(timeIdRange([ids[0]!])).toEqual([
      '019ab5a0-1c2e-0000-0000-000000000000',
      '019ab5a0-1c2e-ffff-ffff-ffffffffffff',
    ]);
  });
});
