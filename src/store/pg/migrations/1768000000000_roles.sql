-- Up Migration

-- Holder role rules (core/roles.ts RoleRule). `id` is `h` and a number of `role_rule_numbers`;
-- `rule` holds the rest of the rule, checked when read.
CREATE SEQUENCE role_rule_numbers;
CREATE TABLE role_rules (
  id text PRIMARY KEY,
  community text NOT NULL,
  rule jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX role_rules_by_community ON role_rules (community);

-- What the bot gave from the rules (core/roles.ts RoleGrant): one row per community, target and
-- person. `pending_*` is a change claimed and not finished yet; it is made by the process that
-- claimed it (the claim is a row lock and a conditional update: once, whatever the processes).
CREATE TABLE role_grants (
  community text NOT NULL,
  target text NOT NULL,
  person text NOT NULL,
  state text NOT NULL CHECK (state IN ('granted', 'lapsed', 'revoked')),
  since timestamptz NOT NULL,
  lapsed_at timestamptz,
  pending_action text CHECK (pending_action IN ('grant', 'revoke')),
  pending_since timestamptz,
  pending_token text,
  failure jsonb,
  recheck boolean NOT NULL DEFAULT false,
  PRIMARY KEY (community, target, person)
);
CREATE INDEX role_grants_people ON role_grants (community, (person COLLATE "C")) WHERE state <> 'revoked';
CREATE INDEX role_grants_lapsed ON role_grants (lapsed_at) WHERE state = 'lapsed';
CREATE INDEX role_grants_pending ON role_grants (pending_since) WHERE pending_token IS NOT NULL;

-- The full re-check's progress: one row while a re-check runs.
CREATE TABLE role_recheck (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  progress jsonb NOT NULL
);

-- The people of a community in key order (the full re-check reads them so).
CREATE INDEX wallets_people ON wallets (community, (person COLLATE "C"), seq);

-- Down Migration
DROP INDEX wallets_people;
DROP TABLE role_recheck;
DROP TABLE role_grants;
DROP TABLE role_rules;
DROP SEQUENCE role_rule_numbers;
