-- Lease features: re-acquire by the holder, several resources at once
-- (fencing_acquire_all), fencing_check, and the fenced_*_result siblings
-- that tell a stale token from a missing row.
\set VERBOSITY terse
\set SHOW_CONTEXT never
CREATE ROLE regress_lf_alice;
CREATE ROLE regress_lf_bob;

-- Re-acquire by the holder of the live lease: the same token, extended; no
-- raise of the HWM. Another holder still gets NULL.
SELECT fencing_acquire('lf-a', 'h1', '1 min') AS first;                      -- 1
SELECT fencing_acquire('lf-a', 'h1', '2 hours') AS again,                    -- 1
       fencing_resource_high_water('lf-a') AS hwm,                           -- 1
       fencing_acquire('lf-a', 'h2', '1 min') IS NULL AS other_refused;
SELECT token, live, expires_at - acquired_at >= interval '2 hours' AS extended
  FROM fencing_leases WHERE resource = 'lf-a';
-- The holder's token is now released: its next acquire is a new token.
SELECT fencing_release('lf-a', 1) AS released,
       fencing_acquire('lf-a', 'h1', '1 min') AS after_release;             -- 2
-- An expired lease is not re-acquired: a new token.
SELECT fencing_acquire('lf-b', 'h1', '10 ms') AS short;                      -- 1
SELECT pg_sleep(0.05);
SELECT fencing_acquire('lf-b', 'h1', '1 min') AS after_expiry;               -- 2
-- The holder text decides: a different holder string is another holder.
SELECT fencing_acquire('lf-b', 'H1', '1 min') IS NULL AS case_matters;

-- fencing_acquire_all: tokens in the order given; all or none.
SELECT fencing_acquire_all(ARRAY['lf-z', 'lf-a', 'lf-m'], 'h1', '1 min') AS tokens;  -- {1,2,1}
SELECT resource, holder, token, live FROM fencing_leases
 WHERE resource IN ('lf-z', 'lf-a', 'lf-m') ORDER BY resource;
-- One of them is taken: NULL, and none of the others is leased to h2.
SELECT fencing_acquire_all(ARRAY['lf-n1', 'lf-m', 'lf-n2'], 'h2', '1 min') IS NULL AS none;
SELECT count(*) AS n_leased FROM fencing_leases WHERE resource LIKE 'lf-n_';
-- ... within a wait too.
SELECT fencing_acquire_all(ARRAY['lf-n1', 'lf-m'], 'h2', '1 min', wait => '30 ms') IS NULL AS none_after_wait;
-- Once it is released, all of them.
SELECT fencing_release('lf-m', 1);
SELECT fencing_acquire_all(ARRAY['lf-n1', 'lf-m', 'lf-n2'], 'h2', '1 min') AS tokens;  -- {1,2,1}
-- Duplicates are an error, not folded.
SELECT fencing_acquire_all(ARRAY['lf-q', 'lf-q'], 'h2', '1 min');
SELECT fencing_acquire_all(ARRAY[]::text[], 'h2', '1 min') AS empty;
-- In a namespace.
SELECT fencing_acquire_all(ARRAY['j2', 'j1'], 'h', '1 min', namespace => 'lf-ns') AS ns_tokens;

-- fencing_check: the live lease's token is current; an older token, a
-- released lease's token and a token below an advanced HWM are not.
SELECT fencing_acquire('lf-c', 'h1', '1 min') AS c1;                         -- 1
SELECT fencing_check('lf-c', 1) AS live_token, fencing_check('lf-c', 0) AS older;
SELECT fencing_release('lf-c', 1);
SELECT fencing_check('lf-c', 1) AS released_token;
SELECT fencing_acquire('lf-c', 'h2', '1 min') AS c2;                         -- 2
SELECT fencing_check('lf-c', 1) AS superseded, fencing_check('lf-c', 2) AS current;
SELECT fencing_resource_advance('lf-c', 7);
SELECT fencing_check('lf-c', 2) AS below_hwm, fencing_check('lf-c', 7) AS token_from_elsewhere;
SELECT fencing_check('lf-never', 3) AS unknown_resource;

-- fenced_*_result: written, stale, hwm.
CREATE TABLE lf_row (id int PRIMARY KEY, v text, fence fencing_token);
SELECT fencing_protect('lf_row');
INSERT INTO lf_row VALUES (1, 'a', 10), (2, 'b', 20);
SELECT * FROM fenced_update_result('lf_row', 15, '{"id": 1}', '{"v": "x"}');   -- written
SELECT * FROM fenced_update_result('lf_row', 12, '{"id": 1}', '{"v": "y"}');   -- stale, hwm 15
SELECT * FROM fenced_update_result('lf_row', 99, '{"id": 9}', '{"v": "y"}');   -- no such row
SELECT fenced_update('lf_row', 12, '{"id": 1}', '{"v": "y"}') AS old_form;     -- still 0
SELECT * FROM fenced_delete_result('lf_row', 19, '{"id": 2}');                 -- stale, hwm 20
SELECT * FROM fenced_delete_result('lf_row', 20, '{"id": 3}');                 -- no such row
SELECT * FROM fenced_upsert_result('lf_row', 14, '{"id": 1, "v": "z"}');       -- stale, hwm 15
SELECT * FROM fenced_upsert_result('lf_row', 30, '{"id": 3, "v": "new"}');     -- written
SELECT * FROM fenced_delete_result('lf_row', 30, '{"id": 3}');                 -- written
SELECT * FROM lf_row ORDER BY id;

-- Privileges: as fencing_acquire's (a writer of the namespace) for
-- fencing_acquire_all and fencing_check; renew and release as before (the
-- namespace owner's).
SET SESSION AUTHORIZATION regress_lf_alice;
SELECT fencing_acquire_all(ARRAY['j1'], 'alice', '1 min', namespace => 'lf-alice') AS alice;
SELECT fencing_acquire('j1', 'alice', '1 min', namespace => 'lf-alice') AS alice_again;
RESET SESSION AUTHORIZATION;
SET SESSION AUTHORIZATION regress_lf_bob;
SELECT fencing_acquire_all(ARRAY['j1'], 'bob', '1 min', namespace => 'lf-alice');
SELECT fencing_check('j1', 1, namespace => 'lf-alice');
SELECT fencing_renew('j1', 1, '1 min', namespace => 'lf-alice');
SELECT fencing_release('j1', 1, namespace => 'lf-alice');
SELECT fenced_update_result('lf_row', 99, '{"id": 1}', '{"v": "bob"}');
RESET SESSION AUTHORIZATION;

-- A re-acquire by the holder whose live token was fenced (a higher token
-- accepted for the resource) gets a new token above it, not the fenced one.
SELECT fencing_acquire('lf-f', 'h', '1 min') AS f1 \gset
SELECT fencing_resource_advance('lf-f', :f1 + 5) AS advanced;
SELECT fencing_acquire('lf-f', 'h', '1 min') > :f1 + 5 AS new_token_above_the_advance;
SELECT fencing_check('lf-f', :f1) AS fenced_token_current;

-- A check is a read: it does not claim an unclaimed namespace.
SET SESSION AUTHORIZATION regress_lf_bob;
SELECT fencing_check('x', 1, namespace => 'lf-unclaimed') AS unclaimed_current;
RESET SESSION AUTHORIZATION;
SELECT count(*) AS claimed FROM fencing.resource_namespace WHERE name = 'lf-unclaimed';

-- After retirement, a released lease's token is not current: the resource is
-- judged by the namespace's floor, and a token equal to it may be that
-- lease's.
SELECT fencing_enable_retirement('lf-ret');
SELECT fencing_acquire('lf-r', 'h', '1 min', namespace => 'lf-ret') AS r1 \gset
SELECT fencing_release('lf-r', :r1, 'lf-ret');
SELECT fencing_check('lf-r', :r1, 'lf-ret') AS released_current;
SELECT fencing_retire('lf-ret', '0 s') AS retired;
SELECT fencing_check('lf-r', :r1, 'lf-ret') AS retired_current;
SELECT fencing_check('lf-r', :r1 + 1, 'lf-ret') AS above_floor_current;

DROP TABLE lf_row;
SELECT fencing_resource_reset(r) FROM (VALUES ('lf-a'), ('lf-b'), ('lf-c'), ('lf-z'), ('lf-m'),
    ('lf-n1'), ('lf-n2'), ('lf-f')) v(r) WHERE fencing_resource_high_water(r) IS NOT NULL;
DELETE FROM fencing.lease WHERE resource LIKE 'lf-%' OR namespace IN ('lf-ns', 'lf-alice');
DELETE FROM fencing.resource_namespace WHERE name IN ('lf-ns', 'lf-alice', 'lf-ret');
DELETE FROM fencing.resource_floor WHERE namespace = 'lf-ret';
DROP ROLE regress_lf_alice;
DROP ROLE regress_lf_bob;
