-- Up Migration

-- Fencing tokens: every taking of a lease gets the next one, so a later holder's token is always larger.
CREATE SEQUENCE lease_tokens;

-- Roles held by one process at a time (store/pg/leases.ts): `ingest:<network>`, `digests:digests`,
-- `chat:<platform>:<chat id>`. A row is the current holder; it is free once `expires_at` (the database's
-- clock) has passed or the session `holder_pid` has ended. Taking a free lease deletes its row and inserts
-- a new one with a new token: a write fenced by the old token (`FOR KEY SHARE` of the row) finishes first.
CREATE TABLE leases (
  name text PRIMARY KEY,
  holder text NOT NULL,
  holder_pid integer NOT NULL,
  token bigint NOT NULL,
  expires_at timestamptz NOT NULL
);

-- Down Migration
DROP TABLE leases;
DROP SEQUENCE lease_tokens;
