/**
 * A listing card's stored parts (core/deliveries.ts: {@link ListingWatch}, {@link ListingFate}), checked
 * when a store reads them back: the journal file and the database are outside input like any other.
 * Both adapters use these schemas, so that they accept and refuse the same records.
 */
import * as v from 'valibot';
import type { ListingFate, ListingFateBody, ListingWatch } from '../core/deliveries.ts';

const text = (max: number) => v.pipe(v.string(), v.maxLength(max));
const ids = v.pipe(v.array(text(80)), v.maxLength(1_000));

const ListingWatchSchema = v.object({
  collection: text(80),
  orderIds: ids,
  tokenIds: ids,
  seller: v.optional(text(80)),
  expiresAt: v.optional(text(40)),
  buyUrl: v.optional(text(2_048)),
  price: v.optional(text(200)),
});

const block = v.pipe(v.number(), v.integer(), v.minValue(0));

const FateBodySchema = v.variant('state', [
  v.object({
    state: v.literal('sold'),
    txnHash: text(100),
    blockNumber: block,
    buyer: v.optional(text(80)),
    orderIds: v.optional(ids),
    price: v.optional(text(200)),
    transaction: v.optional(text(2_048)),
  }),
  v.object({
    state: v.literal('cancelled'),
    txnHash: text(100),
    blockNumber: block,
    transaction: v.optional(text(2_048)),
  }),
  v.object({ state: v.literal('expired') }),
  v.object({ state: v.literal('listed'), reversed: text(100) }),
]);

const FateSchema = v.intersect([
  FateBodySchema,
  v.object({ at: text(40), rev: v.pipe(v.number(), v.integer(), v.minValue(1)) }),
]);

/** The listing of a stored record, or undefined when it is not one. */
export function readListing(value: unknown): ListingWatch | undefined {
  const result = v.safeParse(ListingWatchSchema, value);
  // Absent optional keys stay absent in valibot's output.
  return result.success ? (result.output as ListingWatch) : undefined;
}

/** A stored fate (with its date and revision), or undefined when it is not one. */
export function readFate(value: unknown): ListingFate | undefined {
  const result = v.safeParse(FateSchema, value);
  return result.success ? (result.output as ListingFate) : undefined;
}

/** A fate as a journal line holds it (without date and revision), or undefined when it is not one. */
export function readFateBody(value: unknown): ListingFateBody | undefined {
  const result = v.safeParse(FateBodySchema, value);
  return result.success ? (result.output as ListingFateBody) : undefined;
}
