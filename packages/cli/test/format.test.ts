import { describe, expect, it } from '@jest/globals';
import { changed, deliveryLine, subscriptionLine, type DeliveryView } from '../src/format.js';

const delivery = (status: string, attempts: number, code: number | null = null): DeliveryView => ({
  id: 'd-1',
  subscription: { id: 's-1' },
  status,
  attempts_made: attempts,
  last_status_code: code,
  last_error: code === null ? 'timeout' : 'http_status',
  updated_at: '2026-12-04T10:00:00.000Z',
});

describe('what the CLI prints', () => {
  it('prints a delivery with its type, status, attempts, last answer and subscription', () => {
    expect(deliveryLine('call.completed', delivery('failed', 5, 500))).toBe(
      '2026-12-04T10:00:00.000Z  call.completed            failed     attempts=5  answer=500  subscription=s-1',
    );
    expect(deliveryLine('call.completed', delivery('pending', 1))).toContain('answer=timeout');
  });

  it('prints a delivery again only when its status or attempts changed', () => {
    const seen = new Map<string, string>();
    expect(changed(seen, delivery('pending', 0))).toBe(true);
    expect(changed(seen, delivery('pending', 0))).toBe(false);
    expect(changed(seen, delivery('pending', 1))).toBe(true);
    expect(changed(seen, delivery('succeeded', 2, 200))).toBe(true);
  });

  it('prints a subscription with its kind and the types it chose', () => {
    const line = subscriptionLine({
      id: 's-1',
      status: 'active',
      kind: null,
      callback_url: 'https://app.example/hooks',
      event_types: [],
    });
    expect(line).toBe('s-1  active    *           https://app.example/hooks  all types');
  });
});
