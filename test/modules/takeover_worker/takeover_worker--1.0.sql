\echo Use "CREATE EXTENSION takeover_worker" to load this file. \quit

-- Starts a worker that connects to dbname with no role, and in one
-- transaction sets fencing.token to token, runs UPDATE tbl SET val = val + 1,
-- sleeps pause_ms, then commits. Returns its pid once it has started.
CREATE FUNCTION takeover_worker_launch(dbname text, tbl text, token bigint, pause_ms integer)
RETURNS integer
AS 'MODULE_PATHNAME' LANGUAGE C STRICT;
