/**
 * `a, b,c` as `['a', 'b', 'c']`: how every list variable of the configuration is written
 * (REDIS_SENTINELS, REDIS_CLUSTER_NODES, SECRETS_ENCRYPTION_KEY, DNS_SERVERS, WORKER_QUEUES).
 * Entries are trimmed; empty ones are dropped, so an empty value is an empty list.
 */
export function splitList(value: string): string[] {
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
}
