#!/usr/bin/env node
/** The `webhooks` executable: runs the program, prints a failure on stderr and exits 1. */
import { createProgram } from './program.js';

const stop = new AbortController();
process.once('SIGINT', () => stop.abort());
process.once('SIGTERM', () => stop.abort());
const program = createProgram({
  out: (line) => process.stdout.write(`${line}\n`),
  env: process.env,
  signal: stop.signal,
});
try {
  await program.parseAsync(process.argv);
} catch (error) {
  process.stderr.write(`webhooks: ${(error as Error).message}\n`);
  process.exitCode = 1;
}
