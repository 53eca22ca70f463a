/** API_DOCS: the OpenAPI document and Swagger UI are public by default, and not there at all when off. */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApi, type TestApi } from '../../../test/support/api.js';

let open: TestApi;
let closed: TestApi;
beforeAll(async () => {
  open = await startTestApi('docs-open');
  closed = await startTestApi('docs-closed', { API_DOCS: 'false' });
});
afterAll(async () => {
  await open.close();
  await closed.close();
});

describe('the API description', () => {
  it('is served without a token by default, and answers 404 with API_DOCS=false', async () => {
    for (const url of ['/docs/json', '/docs/']) {
      expect({ url, status: (await open.app.inject({ url })).statusCode }).toEqual({ url, status: 200 });
      expect({ url, status: (await closed.app.inject({ url })).statusCode }).toEqual({ url, status: 404 });
    }
    // The API itself is unchanged.
    expect((await closed.app.inject({ url: '/api/webhooks', headers: closed.auth('acct') })).statusCode).toBe(
      200,
    );
  });
});
