-- Up Migration

-- The bot's record of each collection's market (store/pg/market-history.ts), shared by every process:
-- /collection, digests and relists read the same record whichever process saw the sales and listings.

-- When recording began: one row, written by the first process that opened the record.
CREATE TABLE market_record (
  one boolean PRIMARY KEY DEFAULT true CHECK (one),
  since bigint NOT NULL
);

-- Sales, one row per token sold: a transaction's tokens of one collection, in `position` order. Recorded
-- once whoever saw them (two ingest leaders in turn, a stream resumed). `at` is block time (ms), `usd`
-- the token's price for all its units when known; an empty `token_id` is a sale known by its order only.
CREATE TABLE market_sales (
  seq bigserial UNIQUE,
  network text NOT NULL,
  collection text NOT NULL,
  txn_hash text NOT NULL,
  position integer NOT NULL,
  token_id text NOT NULL,
  amount text NOT NULL,
  usd double precision,
  at bigint NOT NULL,
  PRIMARY KEY (network, txn_hash, collection, position)
);
CREATE INDEX market_sales_by_collection ON market_sales (network, collection, at);
CREATE INDEX market_sales_by_token ON market_sales (network, collection, token_id, at);

-- Floor samples (USD per token of the cheapest listing), at most one per few minutes per collection.
CREATE TABLE market_floors (
  network text NOT NULL,
  collection text NOT NULL,
  at bigint NOT NULL,
  usd double precision NOT NULL,
  PRIMARY KEY (network, collection, at)
);

-- Listings seen lately, by what makes two identical (collection, tokens, seller, price, currency).
CREATE TABLE market_listings (
  network text NOT NULL,
  key text NOT NULL,
  txn_hash text NOT NULL,
  at bigint NOT NULL,
  PRIMARY KEY (network, key)
);
CREATE INDEX market_listings_by_txn ON market_listings (network, txn_hash);
CREATE INDEX market_listings_by_time ON market_listings (at);

-- Down Migration
DROP TABLE market_listings;
DROP TABLE market_floors;
DROP TABLE market_sales;
DROP TABLE market_record;
