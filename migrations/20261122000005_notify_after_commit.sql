-- The statement trigger that NOTIFYed relations_events inside every writing transaction goes.
-- PostgreSQL commits the transactions that NOTIFY one at a time, under a database-wide lock
-- held through the WAL flush, so under concurrency every command's commit queued behind the
-- previous one and group commit was lost (measured: 30 of 32 sessions waiting on that lock at
-- COMMIT). The service now signals after commit instead: one session sends the NOTIFY,
-- coalesced, outside the commands' transactions. Readers still poll as well.
DROP TRIGGER events_notify ON events;
DROP FUNCTION events_notify();
