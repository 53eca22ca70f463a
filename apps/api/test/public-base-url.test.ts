import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startTestApi, type TestApi } from '../../../test/support/api.js';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi('base-url', { PUBLIC_BASE_URL: 'https://hooks.example.com/' });
});
afterAll(() => api.close());

describe('PUBLIC_BASE_URL', () => {
  it('makes Location, resource_uri and page links absolute under it', async () => {
    const created = [];
    for (const path of ['/one', '/two']) {
      const response = await api.app.inject({
        method: 'POST',
        url: '/api/webhooks',
        headers: api.auth('acme'),
        payload: { callback_url: `https://client.example${path}` },
      });
      expect(response.statusCode).toBe(201);
      created.push(response.json());
      expect(response.headers.location).toBe(`https://hooks.example.com/api/webhooks/${response.json().id}`);
      expect(response.json().resource_uri).toBe(response.headers.location);
    }
    const page = await api.app.inject({
      method: 'GET',
      url: '/api/webhooks?page_size=1',
      headers: api.auth('acme'),
    });
    expect(page.json().next).toBe('https://hooks.example.com/api/webhooks?page=2&page_size=1');
    const deliveries = await api.app.inject({
      method: 'GET',
      url: `/api/webhooks/${created[0].id}/deliveries`,
      headers: api.auth('acme'),
    });
    expect(deliveries.statusCode).toBe(200);
    expect(deliveries.json()).toMatchObject({ count: 0, next: null, previous: null });
  });

  it('is the server of the OpenAPI document', async () => {
    const document = (await api.app.inject({ method: 'GET', url: '/docs/json' })).json();
    expect(document.servers).toEqual([
      { url: 'https://hooks.example.com', description: 'This installation' },
    ]);
  });
});
