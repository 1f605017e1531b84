-- 0035_claim_span: the span id of the request that claimed the job, beside its trace id
-- (sql/0034_traces_reviews.sql), so the claim of a retry can link its OTLP span to the claim
-- of the item's earlier attempt (docs/decisions/0064-retry-span-links.md). 16 lower-case hex
-- digits; NULL for a claim without a trace (and for claims with limit keys, whose function
-- records no trace). No index, as for claim_trace_id: the link is read by job id.
ALTER TABLE jobs
    ADD COLUMN claim_span_id text CHECK (claim_span_id ~ '^[0-9a-f]{16}$');
