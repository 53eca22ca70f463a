import { describe, expect, it } from '@jest/globals';
import { scheduleNeedsSetting } from '../src/maintenance-schedules.js';

const every = 60_000;
const checkMs = 10_000;
const now = 1_000_000_000;

describe('whether a maintenance schedule must be set again', () => {
  it('is set when Redis has no such scheduler (it came back empty)', () => {
    expect(scheduleNeedsSetting(undefined, every, checkMs, now)).toBe(true);
  });

  it('is left alone while its next run is due, or overdue by less than a period and a check', () => {
    expect(scheduleNeedsSetting({ next: now + every }, every, checkMs, now)).toBe(false);
    expect(scheduleNeedsSetting({ next: now - every }, every, checkMs, now)).toBe(false);
  });

  it('is set when its next run is long overdue: its delayed job was lost while the scheduler was kept', () => {
    expect(scheduleNeedsSetting({ next: now - every - checkMs - 1 }, every, checkMs, now)).toBe(true);
    expect(scheduleNeedsSetting({}, every, checkMs, now)).toBe(true);
  });
});
