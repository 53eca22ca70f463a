import { describe, expect, it } from '@jest/globals';
import { inFlightOverload, nextOverload, type OverloadBounds } from '../src/lib/overload.js';

const bounds: OverloadBounds = { maxEventLoopDelayMs: 500, maxRequestWaitMs: 400, maxFanOutWaitMs: 600 };
const sample = (eventLoopDelayMs: number, oldestRequestWaitMs: number, fanOutWaitMs = 0) => ({
  eventLoopDelayMs,
  oldestRequestWaitMs,
  fanOutWaitMs,
});

describe('when the API sheds', () => {
  it('does not shed a busy process whose requests still wait less than the bounds', () => {
    expect(nextOverload(null, sample(120, 300), bounds)).toBeNull();
  });

  it('sheds once a request has waited past its bound, or the event loop or the fan-out is late past its own', () => {
    expect(nextOverload(null, sample(0, 401), bounds)).toBe('requestWait');
    expect(nextOverload(null, sample(501, 0), bounds)).toBe('eventLoopDelay');
    expect(nextOverload(null, sample(0, 0, 601), bounds)).toBe('fanOutWait');
  });

  it('keeps shedding until every wait is under half its bound', () => {
    expect(nextOverload('requestWait', sample(0, 300), bounds)).toBe('requestWait');
    expect(nextOverload('requestWait', sample(300, 100), bounds)).toBe('requestWait');
    expect(nextOverload('requestWait', sample(200, 150, 400), bounds)).toBe('requestWait');
    expect(nextOverload('requestWait', sample(200, 150, 250), bounds)).toBeNull();
  });

  it('leaves out a measure whose bound is 0', () => {
    const delayOnly = { maxEventLoopDelayMs: 500, maxRequestWaitMs: 0, maxFanOutWaitMs: 0 };
    expect(nextOverload(null, sample(0, 60_000, 60_000), delayOnly)).toBeNull();
    expect(nextOverload('eventLoopDelay', sample(100, 60_000, 60_000), delayOnly)).toBeNull();
    const none = { maxEventLoopDelayMs: 0, maxRequestWaitMs: 0, maxFanOutWaitMs: 0 };
    expect(nextOverload(null, sample(10_000, 10_000, 10_000), none)).toBeNull();
  });
});

describe('the bound on shed-able requests in flight', () => {
  it('refuses the request that would pass it, and none when it is 0', () => {
    expect(inFlightOverload(511, 512)).toBeNull();
    expect(inFlightOverload(512, 512)).toBe('inFlight');
    expect(inFlightOverload(100_000, 0)).toBeNull();
  });
});
