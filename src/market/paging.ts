/** Reading the platform's paged answers (listings, balances, tokens) the same way on every deployment. */

/**
 * Deployments differ on whether page numbers start at 0 or 1, so user-facing pages are cut from
 * the first `count` items (no page number sent), and the book is sorted here, cheapest or highest
 * first, whatever order the server used.
 */
export function firstItems(count: number): { pageSize: number } {
  return { pageSize: count };
}

/** The page after `page` as the server numbered it (works for 0- and 1-based servers). */
export function nextPage(page: { page?: number } | undefined, requested: number | undefined): number {
  return (page?.page ?? requested ?? 0) + 1;
}
