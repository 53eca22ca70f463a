/**
 * `2xx` … `5xx`: the class of an HTTP status code (RFC 9110 section 15), the `status_class` label
 * of the API's request metric and of the worker's attempt metric.
 */
export function httpStatusClass(status: number): string {
  return `${Math.floor(status / 100)}xx`;
}
