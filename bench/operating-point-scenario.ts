/**
 * The cost at the operating point: what a delivery costs every process of the service (API,
 * workers, Redis, PostgreSQL; cost-probe.ts) when the service runs at a fraction of its capacity,
 * as a platform runs it (30-50% of capacity), against what it costs at saturation, where batching
 * pays off. Each load runs on one stack: a warm-up, the saturating burst that measures capacity,
 * then steady rates at each fraction of that capacity.
 */
import { startCostProbe, type DeliveryCost } from './cost-probe.js';
import { publishAtSteadyRate, waitForSucceeded, withBenchStack } from './harness.js';
import { deliverLoad, subscribeLoad, type DeliveryLoad, type Progress } from './delivery-scenarios.js';

/** The fractions of capacity measured: below the 30-50% a platform runs at, and up to it. */
export const operatingFractions = [0.1, 0.25, 0.5] as const;

/** What one steady rate cost. */
export interface OperatingPoint {
  /** The fraction of the saturating burst's deliveries/s published. */
  fraction: number;
  /** Events/s published. */
  rate: number;
  deliveries: number;
  cost: DeliveryCost;
}

/** A load's cost at saturation and at each operating point. */
export interface OperatingPointRun {
  /** Deliveries/s of the saturating burst. */
  capacity: number;
  saturation: DeliveryCost;
  points: OperatingPoint[];
}

/**
 * Runs `load` on a stack of its own with one worker: `warmupEvents` as a burst (not measured),
 * `load.events` as a burst (the capacity and the cost at saturation), then `seconds` of steady
 * publishing at each of {@link operatingFractions} of that capacity, each measured from the
 * first publish until its last delivery succeeded. Events go round-robin over the load's
 * accounts, one delivery each per subscription.
 */
export async function operatingPointCost(
  name: string,
  load: DeliveryLoad,
  warmupEvents: number,
  seconds: number,
  progress: Progress,
): Promise<OperatingPointRun> {
  return withBenchStack({ tag: name }, async (stack, publisher, receiver) => {
    const accounts = await subscribeLoad(stack, receiver, load);
    await deliverLoad(
      `${name} warm-up`,
      stack,
      publisher,
      accounts,
      { ...load, events: warmupEvents },
      progress,
    );
    const burst = await deliverLoad(name, stack, publisher, accounts, load, progress);
    const points: OperatingPoint[] = [];
    for (const fraction of operatingFractions) {
      const rate = Math.max(1, Math.round((fraction * burst.deliveriesPerSecond) / load.subscriptions));
      const label = `${name} ${fraction * 100}%`;
      const probe = await startCostProbe(stack);
      const started = performance.timeOrigin + performance.now();
      const { sentAt } = await publishAtSteadyRate({
        rate,
        warmupSeconds: 0,
        seconds,
        publish: async (i) =>
          (
            await publisher.publish({
              accountId: accounts[i % accounts.length]!,
              type: 'call.completed',
              data: { n: i },
            })
          ).id,
        onProgress: (done, total) => progress(label, done, total),
      });
      const deliveries = sentAt.size * load.subscriptions;
      let pollCpuMs = 0;
      await waitForSucceeded(stack, deliveries, 120_000, {
        sinceMs: started,
        onPollCpuMs: (ms) => {
          pollCpuMs = ms;
        },
      });
      points.push({ fraction, rate, deliveries, cost: await probe.stop(deliveries, pollCpuMs) });
    }
    return { capacity: burst.deliveriesPerSecond, saturation: burst.cost, points };
  });
}
