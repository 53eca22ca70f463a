/**
 * Page arithmetic and the `next` / `previous` links of the collection envelope (specification
 * section 2.4). Links keep every other query parameter, so a filter survives paging.
 */
import { defaultPageSize } from '@webhooks/shared';

/** A page request after defaults: `page` from 1, `pageSize` 1..100. */
export interface PageRequest {
  page: number;
  pageSize: number;
  /** Rows to skip: `(page - 1) * pageSize`. */
  skip: number;
}

/** Reads `page` and `page_size` (already validated by the route schema) with their defaults. */
export function pageRequest(query: { page?: number; page_size?: number }): PageRequest {
  const page = query.page ?? 1;
  const pageSize = query.page_size ?? defaultPageSize;
  return { page, pageSize, skip: (page - 1) * pageSize };
}

/**
 * The envelope for one page.
 *
 * @param path the collection path, e.g. `/api/webhooks`
 * @param query the request's query parameters (filters are carried into the links)
 * @param count total items across pages
 */
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
