-- Up Migration

-- What chats set with commands (store/state.ts's `chats`), one row per chat.
CREATE TABLE chats (
  chat_key text PRIMARY KEY,
  settings jsonb NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Watch rules. `seq` keeps creation order; ids are `r<number>` from rule_numbers and never reused.
CREATE SEQUENCE rule_numbers;
CREATE TABLE rules (
  seq bigserial UNIQUE,
  id text PRIMARY KEY,
  chat_key text NOT NULL,
  rule jsonb NOT NULL
);
CREATE INDEX rules_by_chat ON rules (chat_key);

-- Long button actions stored by hash.
CREATE TABLE buttons (
  hash text PRIMARY KEY,
  action text NOT NULL,
  created_at timestamptz NOT NULL
);

-- The delivery log (store/journal.ts's records). `seq` is recording order: per chat, the sending order.
CREATE TABLE deliveries (
  seq bigserial UNIQUE,
  id text PRIMARY KEY,
  event_id text NOT NULL,
  chat_key text NOT NULL,
  network text NOT NULL,
  txn_hash text NOT NULL,
  block_number bigint NOT NULL,
  kind text,
  usd double precision,
  state text NOT NULL CHECK (state IN ('pending', 'sending', 'sent', 'failed', 'dropped')),
  attempts integer NOT NULL DEFAULT 0,
  send_key text,
  message_id text,
  last_error text,
  reorged boolean NOT NULL DEFAULT false,
  edited_at timestamptz,
  final boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL,
  updated_at timestamptz NOT NULL,
  payload text NOT NULL
);
-- What a chat still needs: sends, and edits of reorganised messages.
CREATE INDEX deliveries_open ON deliveries (chat_key, seq)
  WHERE (state IN ('pending', 'sending') AND NOT reorged) OR (state = 'sent' AND reorged AND edited_at IS NULL);
CREATE INDEX deliveries_by_txn ON deliveries (network, txn_hash);
CREATE INDEX deliveries_by_message ON deliveries (chat_key, message_id) WHERE message_id IS NOT NULL;
CREATE INDEX deliveries_by_chat_time ON deliveries (chat_key, created_at);
CREATE INDEX deliveries_closed ON deliveries (updated_at) WHERE state IN ('failed', 'dropped') OR final;

-- The last block of each network whose events were all processed.
CREATE TABLE cursors (
  network text PRIMARY KEY,
  block bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
);

-- Down Migration
DROP TABLE cursors;
DROP TABLE deliveries;
DROP TABLE buttons;
DROP TABLE rules;
DROP SEQUENCE rule_numbers;
DROP TABLE chats;
