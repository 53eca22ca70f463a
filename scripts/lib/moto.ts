/**
 * An AWS API of a test's own: `moto_server` (Python's moto, on every machine of this kind) on a free
 * port, serving SQS, SNS, EventBridge, Kinesis, S3 and STS; its state lives and dies with the process.
 */
import { spawn } from 'node:child_process';
import { freePort } from './services.js';
import { waitFor } from './wait.js';

/** A running moto server. */
export interface Moto {
  /** `http://127.0.0.1:<port>`, the endpoint every AWS client of the test names. */
  url: string;
  stop(): Promise<void>;
}

/** Starts moto and waits until it answers; sets dummy AWS credentials in this process's environment. */
export async function startMoto(): Promise<Moto> {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const child = spawn('moto_server', ['-H', '127.0.0.1', '-p', String(port)], { stdio: 'ignore' });
  // The SDK's default chain reads them; moto takes any.
  process.env.AWS_ACCESS_KEY_ID ??= 'testing';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'testing';
  await waitFor(
    `moto_server on ${port}`,
    async () => {
      try {
        return (await fetch(`${url}/moto-api/`)).status < 500;
      } catch {
        return false;
      }
    },
    30_000,
    200,
  );
  return {
    url,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
