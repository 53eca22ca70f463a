import { describe, expect, it } from '@jest/globals';
import { attemptStatusClass } from '../src/delivery/status-class.js';

describe('the status_class of an attempt', () => {
  it.each([
    [{ statusCode: 200, errorClass: null }, '2xx'],
    [{ statusCode: 302, errorClass: 'http_status' }, '3xx'],
    [{ statusCode: 429, errorClass: 'http_status' }, '4xx'],
    [{ statusCode: 503, errorClass: 'http_status' }, '5xx'],
    [{ statusCode: null, errorClass: 'timeout' }, 'timeout'],
    [{ statusCode: null, errorClass: 'connection_refused' }, 'connect_error'],
    [{ statusCode: null, errorClass: 'connection_reset' }, 'connect_error'],
    [{ statusCode: null, errorClass: 'dns' }, 'connect_error'],
    [{ statusCode: null, errorClass: 'blocked_address' }, 'blocked'],
    [{ statusCode: null, errorClass: null }, 'confirmed'],
    [{ statusCode: null, errorClass: 'broker_unavailable' }, 'connect_error'],
    [{ statusCode: null, errorClass: 'broker_refused' }, 'refused'],
    [{ statusCode: null, errorClass: 'broker_unroutable' }, 'refused'],
    [{ statusCode: null, errorClass: 'other' }, 'other'],
  ] as const)('%j is %s', (result, expected) => {
    expect(attemptStatusClass(result)).toBe(expected);
  });
});
