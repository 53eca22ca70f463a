import { describe, expect, it } from '@jest/globals';
import { connectionBound, descriptorLimit, outOfDescriptors } from '../src/lib/descriptors.js';

const limits = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            20000                524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('the API’s bound on connections', () => {
  it('reads the soft limit on open files of the process', () => {
    expect(descriptorLimit(limits)).toBe(20_000);
    expect(descriptorLimit('Max cpu time unlimited unlimited seconds')).toBeNull();
  });

  it('is API_MAX_CONNECTIONS when set, else three quarters of the limit, never below 64', () => {
    expect(connectionBound(500, 20_000)).toBe(500);
    expect(connectionBound(0, 20_000)).toBe(15_000);
    expect(connectionBound(0, 256)).toBe(192);
    expect(connectionBound(0, 40)).toBe(64);
    expect(connectionBound(0, null)).toBeNull();
  });

  it('tells running out of descriptors from other errors', () => {
    expect(outOfDescriptors(Object.assign(new Error('x'), { code: 'EMFILE' }))).toBe(true);
    expect(outOfDescriptors(Object.assign(new Error('x'), { code: 'ENFILE' }))).toBe(true);
    expect(outOfDescriptors(Object.assign(new Error('x'), { code: 'ECONNRESET' }))).toBe(false);
    expect(outOfDescriptors(null)).toBe(false);
  });
});
