/** Which resolved addresses a callback may reach: the rule checked before asking an egress proxy. */
import { describe, expect, it } from '@jest/globals';
import { addressAllowed } from '../src/index.js';

const strict = { allowPrivate: false, denyCidrs: ['203.0.113.0/24'] };
const open = { allowPrivate: true, denyCidrs: ['203.0.113.0/24'] };

describe('addressAllowed', () => {
  it.each([
    ['93.184.216.34', true, true],
    ['2606:2800:220:1::1', true, true],
    ['127.0.0.1', false, true],
    ['10.1.2.3', false, true],
    ['::1', false, true],
    ['::ffff:10.0.0.1', false, true],
    ['169.254.169.254', false, false],
    ['fe80::1', false, false],
    ['203.0.113.9', false, false],
    ['not an address', false, false],
  ])('%s: %s strict, %s with CALLBACK_ALLOW_PRIVATE', (address, strictly, openly) => {
    expect(addressAllowed(strict, address)).toBe(strictly);
    expect(addressAllowed(open, address)).toBe(openly);
  });
});
