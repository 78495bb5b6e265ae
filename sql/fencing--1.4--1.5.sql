-- fencing 1.4 -> 1.5
\echo Use "ALTER EXTENSION fencing UPDATE TO '1.5'" to load this file. \quit

----------------------------------------------------------------------------
-- Bounded state: retirement of idle per-key state into floors.
----------------------------------------------------------------------------

-- (retirement: end of section)

----------------------------------------------------------------------------
-- Statistics: floors and retirement in the views; LRU eviction counted.
----------------------------------------------------------------------------

-- (statistics: end of section)

----------------------------------------------------------------------------
-- Leases: re-acquire, several resources at once, FIFO waiters, checks.
----------------------------------------------------------------------------

-- (leases: end of section)
