/** Waiting in tests: the helpers the demo and the benchmarks share (scripts/lib/wait.ts). */
export { sleep, waitFor } from '../../scripts/lib/wait.js';
