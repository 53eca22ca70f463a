import { deliveryThroughput } from './delivery-scenarios.js';
import { transportBaseline } from './harness.js';
const n = Number(process.argv[2] ?? 3000);
const base = await transportBaseline(n, 50);
const r = await deliveryThroughput('e2e', n, 1, Number(process.argv[3] ?? 1), () => {});
console.log({ base, ...r, ratio: r.deliveriesPerSecond / base });
process.exit(0);
