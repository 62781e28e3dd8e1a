-- Up Migration

-- Sale context (alerts/sale-context.ts): who bought each recorded sale and what they paid in the
-- order's currency, so that the alert of the token's next sale can say how long its seller held it
-- and their profit or loss. Rows recorded before have neither: their next sale says nothing of them.
ALTER TABLE market_sales
  ADD COLUMN buyer text,
  ADD COLUMN paid_amount text,
  ADD COLUMN paid_currency text,
  ADD COLUMN paid_decimals integer;

-- Down Migration
ALTER TABLE market_sales
  DROP COLUMN paid_decimals,
  DROP COLUMN paid_currency,
  DROP COLUMN paid_amount,
  DROP COLUMN buyer;
