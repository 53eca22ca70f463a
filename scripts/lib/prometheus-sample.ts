/** Reading one sample of a Prometheus text exposition (what `/metrics` answers). */

/**
 * The value of `series` (name with its labels exactly as exposed, e.g.
 * `webhook_deliveries_total{outcome="succeeded"}`) in `text`; 0 when it is absent, as a counter
 * that never moved is.
 */
export function prometheusSample(text: string, series: string): number {
  const line = text.split('\n').find((entry) => entry.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}
