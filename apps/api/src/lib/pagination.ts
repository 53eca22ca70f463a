/** Page arithmetic and the envelope's `next`/`previous` links (specification §2.4), keeping the query's filters. */
import { defaultPageSize } from '@webhooks/shared';
import { HttpProblem } from './problem.js';

/** Most rows a page may skip: PostgreSQL reads and discards each, so a deep page costs all before it. */
export const maxSkippedRows = 10_000;

/** A page request after defaults: `page` from 1, `pageSize` 1..100. */
export interface PageRequest {
  page: number;
  pageSize: number;
  /** Rows to skip: `(page - 1) * pageSize`. */
  skip: number;
}

/**
 * `page` and `page_size` (validated by the route) with defaults; `narrowing` says how to narrow instead.
 * @throws HttpProblem 400 naming `page` when it starts past {@link maxSkippedRows} rows
 */
export function pageRequest(query: { page?: number; page_size?: number }, narrowing: string): PageRequest {
  const page = query.page ?? 1;
  const pageSize = query.page_size ?? defaultPageSize;
  const skip = (page - 1) * pageSize;
  if (skip > maxSkippedRows) {
    const detail = `page ${page} of ${pageSize} starts past the first ${maxSkippedRows} results, which is as deep as pages go; ${narrowing}`;
    throw new HttpProblem(400, 'validation', detail, [{ pointer: '/page', detail }]);
  }
  return { page, pageSize, skip };
}

/** The envelope of one page of `count` items at `path`, its links carrying `query`'s filters. */
export function pageEnvelope<T>(
  path: string,
  query: Record<string, unknown>,
  request: PageRequest,
  count: number,
  results: T[],
): { count: number; next: string | null; previous: string | null; results: T[] } {
  const link = (page: number) => {
    const params = new URLSearchParams();
    for (const [key, value] of Object.entries(query)) {
      if (value !== undefined && key !== 'page' && key !== 'page_size') params.set(key, String(value));
    }
    params.set('page', String(page));
    params.set('page_size', String(request.pageSize));
    return `${path}?${params.toString()}`;
  };
  const lastPage = Math.max(1, Math.ceil(count / request.pageSize));
  return {
    count,
    next: request.page < lastPage ? link(request.page + 1) : null,
    previous: request.page > 1 ? link(Math.min(request.page - 1, lastPage)) : null,
    results,
  };
}
