/**
 * The paginated collection envelope of the specification, section 2.4: `count`, `next`,
 * `previous`, `results`; pages chosen with `page` (from 1) and `page_size` (1 to 100, default 20).
 */
import Type, { type TSchema } from 'typebox';

/** Largest `page` accepted (a bound keeps the row offset within what PostgreSQL takes). */
export const maxPage = 1_000_000;

/** Largest `page_size` accepted. */
export const maxPageSize = 100;
/** `page_size` when none is given. */
export const defaultPageSize = 20;

/** Query parameters choosing a page. */
export const PageQuery = {
  page: Type.Optional(
    Type.Integer({ minimum: 1, maximum: maxPage, default: 1, description: 'Page number, from 1' }),
  ),
  page_size: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: maxPageSize,
      default: defaultPageSize,
      description: 'Items per page',
    }),
  ),
};

/** The envelope around a page of `item`. */
export function Page<T extends TSchema>(item: T) {
  return Type.Object({
    count: Type.Integer({ description: 'Total number of items across pages' }),
    next: Type.Union([Type.String(), Type.Null()], { description: 'Address of the next page, or null' }),
    previous: Type.Union([Type.String(), Type.Null()], {
      description: 'Address of the previous page, or null',
    }),
    results: Type.Array(item),
  });
}
