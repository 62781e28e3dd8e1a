import { errors } from './errors.ts';
import { checkEnum, type In, type Json } from './validate.ts';

export type PageFlavor = 'marketplace' | 'indexer' | 'relayer';

export interface SortKey {
  column: string;
  order: 'ASC' | 'DESC';
}

/** A page request: numbered pages from 1 (0 or absent reads as the first page). */
export interface PageRequest {
  page: number;
  pageSize: number;
  sort: SortKey[];
}

export interface PageRules {
  defaultSize: number;
  maxSize: number;
  /** Sortable columns: accepted spellings -> canonical name. */
  columns: Readonly<Record<string, string>>;
  defaultSort: SortKey[];
}

const SORT_ORDERS = ['DESC', 'ASC'] as const;

/** Reads `page` of a request; a pageSize above the maximum is lowered to it. */
export function readPage(input: In, rules: PageRules, key = 'page'): PageRequest {
  const page = input.optObject(key);
  if (!page) return { page: 1, pageSize: rules.defaultSize, sort: rules.defaultSort };
  const number = page.optInt('page', { min: 0 }) ?? 0;
  const size = page.optInt('pageSize', { min: 0 }) ?? 0;
  const sortItems = page.optList('sort') ?? [];
  const sort = sortItems.map((item) => {
    if (item.value === null || typeof item.value !== 'object' || Array.isArray(item.value)) {
      throw errors.invalidArgument(`${item.path}: expected an object {column, order}`);
    }
    const entry = item.value as Json;
    const column = entry.column;
    const canonical = typeof column === 'string' ? rules.columns[column] : undefined;
    if (canonical === undefined) {
      throw errors.invalidArgument(
        `${item.path}.column: expected one of ${Object.keys(rules.columns).join(', ')}, got ${JSON.stringify(column)}`,
      );
    }
    const order =
      entry.order === undefined || entry.order === null
        ? 'ASC'
        : (SORT_ORDERS[checkEnum(entry.order, `${item.path}.order`, SORT_ORDERS)] ?? 'ASC');
    return { column: canonical, order };
  });
  const column = page.optString('column');
  if (sort.length === 0 && column) {
    const canonical = rules.columns[column];
    if (canonical === undefined) {
      throw errors.invalidArgument(
        `${page.at('column')}: expected one of ${Object.keys(rules.columns).join(', ')}, got ${JSON.stringify(column)}`,
      );
    }
    sort.push({ column: canonical, order: 'ASC' });
  }
  return {
    page: Math.max(1, number),
    pageSize: size === 0 ? rules.defaultSize : Math.min(size, rules.maxSize),
    sort: sort.length > 0 ? sort : rules.defaultSort,
  };
}

/** One page of `items` and whether more follow. */
export function paginate<T>(items: readonly T[], page: PageRequest): { items: T[]; more: boolean } {
  const start = (page.page - 1) * page.pageSize;
  return { items: items.slice(start, start + page.pageSize), more: start + page.pageSize < items.length };
}

/** The response page object, with the keys real servers of each service send. */
export function pageJson(page: PageRequest, more: boolean, flavor: PageFlavor, total?: number): Json {
  const sort = page.sort.map((s) => ({ column: s.column, order: s.order }));
  if (flavor === 'marketplace') return { page: page.page, pageSize: page.pageSize, more, sort };
  const out: Json = { page: page.page, pageSize: page.pageSize, more, column: page.sort[0]?.column ?? '', sort };
  if (flavor === 'relayer') out.totalRecords = total ?? 0;
  return out;
}

/** Compares by the sort keys, using `value` to read a column of an item. */
export function sorter<T>(
  sort: readonly SortKey[],
  value: (item: T, column: string) => number | string,
): (a: T, b: T) => number {
  return (a, b) => {
    for (const key of sort) {
      const x = value(a, key.column);
      const y = value(b, key.column);
      const diff = typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
      if (diff !== 0) return key.order === 'ASC' ? diff : -diff;
    }
    return 0;
  };
}
