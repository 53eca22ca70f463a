import { describe, expect, it } from '@jest/globals';
import { parseCallbackPolicy } from '../src/callback-policy.js';
import { checkTransformationOutput as checkWithPolicy } from '../src/transformation.js';

const url = 'https://hooks.slack.example/services/T0';
const policy = parseCallbackPolicy({
  NODE_ENV: 'test',
  CALLBACK_ALLOW_PRIVATE: false,
  CALLBACK_PORTS: '80,443,1024-65535',
  CALLBACK_DENY_CIDRS: '',
  CALLBACK_VERIFICATION: 'off',
});
const checkTransformationOutput = (value: unknown, inputUrl: string) =>
  checkWithPolicy(value, inputUrl, policy);

describe('what a transformation returns', () => {
  it('is the webhook to send: any JSON payload, headers the custom headers’ rules accept, an http(s) URL', () => {
    const returned = { payload: { text: 'hi' }, headers: { 'X-Team': 'a' }, url };
    expect(checkTransformationOutput(returned, 'https://client.example/hooks')).toEqual({
      kind: 'transformed',
      payload: { text: 'hi' },
      headers: { 'x-team': 'a' },
      url,
    });
  });

  it('cancels the delivery with cancel: true, whatever else it holds', () => {
    expect(checkTransformationOutput({ cancel: true }, url)).toEqual({ kind: 'cancelled' });
  });

  it('keeps a broker destination where it is: its URI back unchanged, and no other URL', () => {
    const broker = 'rabbitmq://orders/webhooks/order.created';
    expect(checkTransformationOutput({ payload: 1, headers: {}, url: broker }, broker)).toMatchObject({
      kind: 'transformed',
      url: broker,
    });
    expect(checkTransformationOutput({ payload: 1, headers: {}, url }, broker)).toEqual({
      kind: 'failed',
      error: 'the url of a broker destination cannot be changed',
    });
  });

  it.each([
    [5, /must return the webhook object/],
    [null, /must return the webhook object/],
    [{ headers: {}, url }, /no payload/],
    [{ payload: 1, headers: { a: 1 }, url }, /object of strings/],
    [{ payload: 1, headers: { 'webhook-signature': 'forged' }, url }, /webhook-signature is refused/],
    [{ payload: 1, headers: { host: 'elsewhere' }, url }, /host is refused/],
    [{ payload: 1, headers: {}, url: '/relative' }, /must be an absolute URL/],
    [{ payload: 1, headers: {}, url: 'file:///etc/passwd' }, /http or https/],
    [{ payload: 1, headers: {}, url: 'https://user:pass@client.example/hooks' }, /credentials/],
    [{ payload: 1, headers: {}, url: 'http://localhost:8080/hooks' }, /loopback and internal hosts/],
    [{ payload: 1, headers: {}, url: 'https://db.internal/hooks' }, /internal hosts/],
    [{ payload: 1, headers: {}, url: 'https://intranet/hooks' }, /single-label/],
    [{ payload: 1, headers: {}, url: 'https://client.example:22/hooks' }, /port 22/],
  ])('fails the attempt for %j', (value, error) => {
    const result = checkTransformationOutput(value, 'https://client.example/hooks');
    expect(result.kind).toBe('failed');
    expect(result.kind === 'failed' && result.error).toMatch(error);
  });

  it('keeps the verified origin where callbacks are verified: another path, not another host', () => {
    const verified = { ...policy, verification: true };
    const webhook = (to: string) => ({ payload: 1, headers: {}, url: to });
    expect(
      checkWithPolicy(webhook('https://client.example/other'), 'https://client.example/hooks', verified),
    ).toMatchObject({ kind: 'transformed' });
    const moved = checkWithPolicy(webhook(url), 'https://client.example/hooks', verified);
    expect(moved.kind === 'failed' && moved.error).toMatch(/verified origin https:\/\/client.example/);
  });
});
