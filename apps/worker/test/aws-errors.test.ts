/** What an AWS service's error means for an attempt, and whether the breaker counts it. */
import { describe, expect, it } from '@jest/globals';
import { awsFailure } from '../src/destinations/aws-errors.js';
import { countsForBreaker } from '../src/delivery/outcome.js';

const write = { service: 'S3', resource: 'bucket', name: 'archive', region: 'eu-west-1' };

describe('a failed AWS write', () => {
  it('names a missing resource, a refusal and a throttle apart from an outage', () => {
    expect(awsFailure('NoSuchBucket', write)).toEqual({
      errorClass: 'broker_refused',
      message: 'S3 has no bucket named "archive" in eu-west-1',
    });
    expect(awsFailure('AccessDenied', write)).toEqual({
      errorClass: 'broker_refused',
      message: 'S3 refused the write to bucket "archive" (AccessDenied)',
    });
    for (const code of ['SlowDown', 'ProvisionedThroughputExceededException', 'ThrottlingException'])
      expect(awsFailure(code, write).errorClass).toBe('broker_throttled');
    expect(awsFailure('InternalError', write)).toEqual({
      errorClass: 'broker_unavailable',
      message: 'S3 could not be reached',
    });
  });

  it('is counted by the breaker unless it is a throttle (or nothing was sent)', () => {
    expect(countsForBreaker({ errorClass: 'broker_refused' })).toBe(true);
    expect(countsForBreaker({ errorClass: 'http_status' })).toBe(true);
    expect(countsForBreaker({ errorClass: 'broker_throttled' })).toBe(false);
    expect(countsForBreaker({ errorClass: 'transformation_failed' })).toBe(false);
  });
});
