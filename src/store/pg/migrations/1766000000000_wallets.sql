-- Up Migration

-- One-time wallet verification links (core/wallets.ts VerifyLink). `id` is the SHA-256 of the
-- link's bearer token, never the token itself. `challenge` is the message issued last, until a
-- signature for it is tried.
CREATE TABLE verify_links (
  id text PRIMARY KEY,
  community text NOT NULL,
  community_name text NOT NULL,
  person text NOT NULL,
  channel text NOT NULL CHECK (channel IN ('page', 'chat')),
  mini_app boolean NOT NULL,
  page_token text NOT NULL,
  created_at timestamptz NOT NULL,
  expires_at timestamptz NOT NULL,
  browser text,
  challenge jsonb,
  attempts integer NOT NULL DEFAULT 0,
  used_at timestamptz
);
CREATE INDEX verify_links_open ON verify_links (community, person, channel) WHERE used_at IS NULL;
CREATE INDEX verify_links_by_expiry ON verify_links (expires_at);

-- Verified wallets: one person per community and address. `seq` keeps verification order.
CREATE TABLE wallets (
  seq bigserial UNIQUE,
  community text NOT NULL,
  address text NOT NULL,
  person text NOT NULL,
  kind text NOT NULL CHECK (kind IN ('eoa', 'contract')),
  verified_at timestamptz NOT NULL,
  PRIMARY KEY (community, address)
);
CREATE INDEX wallets_by_person ON wallets (person);
CREATE INDEX wallets_by_address ON wallets (address);

-- Down Migration
DROP TABLE wallets;
DROP TABLE verify_links;
