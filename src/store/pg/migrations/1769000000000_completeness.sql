-- Up Migration

-- How complete the bot's record of each network is, per UTC day (core/ports.ts CompletenessStore):
-- added to by the process that ingests the network, a few seconds' worth at a time.
CREATE TABLE completeness (
  network text NOT NULL,
  day date NOT NULL,
  events bigint NOT NULL DEFAULT 0,
  blocks_read_back bigint NOT NULL DEFAULT 0,
  blocks_missed bigint NOT NULL DEFAULT 0,
  PRIMARY KEY (network, day)
);

-- Down Migration

DROP TABLE completeness;
