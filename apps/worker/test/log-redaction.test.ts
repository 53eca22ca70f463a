import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApi, testEnv, type TestApi } from '../../../test/support/api.js';
import { spawnWorker } from '../../../test/support/worker-process.js';
import { waitFor } from '../../../scripts/lib/wait.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi('log-redaction');
});
afterAll(() => api.close());

describe("the connection URLs' secrets", () => {
  it('appear in no log line, though the URLs carry them in the password and in the query', async () => {
    const url = new URL(api.database.url);
    url.password = 'pw-userinfo-9';
    url.searchParams.set('password', 'pw-query-7');
    const worker = spawnWorker(testEnv(url.toString(), api.prefix, { LOG_LEVEL: 'info' }));
    try {
      await waitFor('the worker to start', () => worker.output.join('').includes('worker started'));
      const output = worker.output.join('');
      expect(output).toContain('redacted');
      expect(output).not.toMatch(/pw-userinfo-9|pw-query-7/);
    } finally {
      worker.child.kill('SIGKILL');
      await worker.exited;
    }
  });
});
