-- verdict_claim_pick takes the items its statement took already (p_not): claim_many_limited
-- picks once per flow step, key set and estimate, and two picks of one flow step in one
-- statement would otherwise find the same items (a transaction does not skip its own row
-- locks). A new argument is a new signature: the old one goes, and sql/functions/ defines the
-- new (with p_not DEFAULT '{}', so verdict_claim_limited calls it as before).
DROP FUNCTION IF EXISTS verdict_claim_pick(text, integer, text[], bigint);
