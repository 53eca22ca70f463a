/** Response headers with a rule behind them, shared by routes. */

/**
 * `Cache-Control` of every answer that carries a signing secret (RFC 9111 section 5.2.2.5): no
 * cache, shared or private, may keep it.
 */
export const noStore = { 'cache-control': 'no-store' } as const;
