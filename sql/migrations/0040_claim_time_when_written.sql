-- A job's claimed_at is the time its row was written (clock_timestamp()), as a transition's
-- logged_at always was, not its transaction's start (now()). The claim is recorded by the
-- job's row (0039), and the audit's logged_at of a claim is claimed_at: written after the
-- claim's statements saw the slots and items it took free, it comes after the end that freed
-- them (an end's logged_at is its transaction's start, before its commit). Replaying the
-- audit in logged_at order then counts no job twice in a slot.
ALTER TABLE jobs ALTER COLUMN claimed_at SET DEFAULT clock_timestamp();
