-- Up Migration

-- Listing cards that follow their listing (core/deliveries.ts ListingWatch, ListingFate): a listing
-- alert keeps its listing, and once it sells, is cancelled or expires its message is edited to say so.
-- Rows recorded before have none of it and read as they did.
ALTER TABLE deliveries
  ADD COLUMN listing jsonb,
  ADD COLUMN listing_collection text,
  ADD COLUMN listing_expires_at timestamptz,
  ADD COLUMN fate jsonb,
  ADD COLUMN fate_rev integer NOT NULL DEFAULT 0,
  ADD COLUMN fate_shown integer NOT NULL DEFAULT 0;

-- Sales and cancels look up the cards of their collection; the expiry sweep the cards that expired.
CREATE INDEX deliveries_listings ON deliveries (network, listing_collection) WHERE listing_collection IS NOT NULL;
CREATE INDEX deliveries_listing_expiry ON deliveries (listing_expires_at)
  WHERE listing_expires_at IS NOT NULL AND fate IS NULL;
-- Cards closed by a transaction, found again when it is reorganised away.
CREATE INDEX deliveries_fate_txn ON deliveries ((fate->>'txnHash')) WHERE fate IS NOT NULL;

-- What a chat still needs now includes edits to show a listing's fate.
DROP INDEX deliveries_open;
CREATE INDEX deliveries_open ON deliveries (chat_key, seq)
  WHERE (state IN ('pending', 'sending') AND NOT reorged) OR (state = 'sent' AND reorged AND edited_at IS NULL)
     OR (state = 'sent' AND NOT reorged AND fate_rev <> fate_shown);

-- Down Migration
DROP INDEX deliveries_open;
CREATE INDEX deliveries_open ON deliveries (chat_key, seq)
  WHERE (state IN ('pending', 'sending') AND NOT reorged) OR (state = 'sent' AND reorged AND edited_at IS NULL);
DROP INDEX deliveries_fate_txn;
DROP INDEX deliveries_listing_expiry;
DROP INDEX deliveries_listings;
ALTER TABLE deliveries
  DROP COLUMN fate_shown,
  DROP COLUMN fate_rev,
  DROP COLUMN fate,
  DROP COLUMN listing_expires_at,
  DROP COLUMN listing_collection,
  DROP COLUMN listing;
