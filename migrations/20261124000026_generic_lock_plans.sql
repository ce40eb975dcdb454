-- The group functions' statements are planned once per session, not on every call (issue 28).
-- PL/pgSQL caches each statement's plan but, for statements with parameters, keeps planning
-- them afresh while a plan for the actual values looks cheaper than the generic one; with
-- arrays of a few users or streams it always does (the generic plan assumes a hundred
-- elements), so every group paid the planner for each statement inside these functions:
-- a profile of 64 clients' follows put 9% of PostgreSQL's CPU in that planning. Their generic
-- plans are the plans the custom ones are (index look-ups per element; measured: the locks and
-- catch-up of a follow group 0.33 -> 0.17 ms). Set per function, not per session: for the
-- service's own set-based statements (a projector's join of a batch against its table) the
-- generic plan is far worse than a custom one (measured: 27 ms against 0.7 ms).
ALTER FUNCTION lock_writers_and_load(bigint[], boolean[], text, text[], bigint[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION lock_and_load(text, text[], bigint[], boolean)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION lock_users(bigint[], boolean[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION try_lock_users_shared(bigint[])
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION lock_streams(text, text[], boolean)
    SET plan_cache_mode = force_generic_plan;
ALTER FUNCTION lock_writers(bigint[], boolean[], text, text[])
    SET plan_cache_mode = force_generic_plan;
