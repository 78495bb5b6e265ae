-- fencing: plain-SQL monitoring, for cron jobs, check_postgres-style probes or
-- psql (the same data as postgres_exporter.yml, as alert queries). Each query
-- is named by a "-- name:" line; each returns no rows while all is well
-- (except "top", a report). Counters are since the server start or
-- fencing_stats_reset(); they need shared_preload_libraries = 'fencing'.
-- Tested by test/monitoring/check.py.

-- name: counters_disabled
-- The counters are not kept: everything below then sees NULLs.
SELECT hint FROM fencing_stats_info WHERE NOT counters_enabled;

-- name: counters_full
-- Every fencing.stats_max entry is in use, or was: new tables, namespaces and
-- lease resources evict the least recently used entries, whose counts are
-- lost (their counters are NULL in the views). Any role may fill the entries
-- (a lease per resource name): raise fencing.stats_max, and look for who did.
SELECT entries, max_entries, untracked_events, evicted FROM fencing_stats_info
 WHERE entries >= max_entries OR evicted > 0;

-- name: stale_rejections
-- Any stale write turned away (refused or skipped): a lock holder lost its
-- lock and kept writing. Compare writes with the previous run to alert on new ones.
SELECT kind, COALESCE(table_name::text, namespace) AS object,
       writes_rejected, writes_skipped, last_rejection_at,
       last_rejected_token, last_rejection_hwm, last_rejected_key
  FROM fencing_stats
 WHERE writes_rejected + writes_skipped > 0
 ORDER BY last_rejection_at DESC;

-- name: lease_expiries
-- A holder renewed or released a lease that had expired under it: it was
-- paused or too slow for its TTL (and may have written stale data meanwhile).
SELECT namespace, resource, expiries_detected, current_token, holder, live
  FROM fencing_lease_stats
 WHERE expiries_detected > 0
 ORDER BY expiries_detected DESC;

-- name: hwm_near_top
-- A high-water mark within 1% of the top of the token range.
SELECT kind, COALESCE(table_name::text, namespace) AS object, highest_hwm, tokens_left
  FROM fencing_stats
 WHERE token_range_used >= 0.99
UNION ALL
SELECT 'lease', namespace || '/' || resource, current_token, 9223372036854775807 - current_token::bigint
  FROM fencing_lease_stats
 WHERE current_token::bigint >= 0.99 * 9223372036854775807::float8;

-- name: lease_contention
-- Contended acquires per resource, with the mean and longest wait. Alert on
-- the rate: sample contended_attempts twice and divide by the interval.
SELECT namespace, resource, contended_attempts, acquisitions,
       round((wait_total_ms / NULLIF(contended_attempts, 0))::numeric, 3) AS mean_wait_ms,
       wait_max_ms
  FROM fencing_lease_stats
 WHERE contended_attempts > 0
 ORDER BY contended_attempts DESC;

-- name: top
-- The hottest tables, namespaces and lease resources.
SELECT * FROM fencing_top LIMIT 10;
