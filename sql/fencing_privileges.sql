-- Privileges: nothing a caller controls (types, domains, operators, names,
-- search_path, pg_temp) ever runs with more rights than the caller, and every
-- escalation attempt below leaves rolsuper false.
\set VERBOSITY terse
CREATE ROLE regress_priv_reader;
CREATE ROLE regress_priv_owner;
CREATE SCHEMA priv AUTHORIZATION regress_priv_owner;
GRANT USAGE ON SCHEMA priv TO regress_priv_reader;
-- Makes its argument a superuser when it runs with superuser rights; as anyone
-- else the ALTER ROLE fails and is swallowed, so the attempt is silent.
CREATE FUNCTION public.regress_escalate(role_name text) RETURNS boolean
    LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE pg_catalog.format('ALTER ROLE %I SUPERUSER', role_name);
    RETURN true;
EXCEPTION WHEN insufficient_privilege THEN
    RETURN true;
END $$;
CREATE VIEW public.regress_supers AS
    SELECT rolname, rolsuper FROM pg_catalog.pg_roles
     WHERE rolname IN ('regress_priv_reader', 'regress_priv_owner') ORDER BY rolname;
GRANT SELECT ON public.regress_supers TO PUBLIC;

SET SESSION AUTHORIZATION regress_priv_owner;
CREATE TABLE priv.inventory (item text PRIMARY KEY, stock int, fence fencing_token);
INSERT INTO priv.inventory VALUES ('SKU-1', 10, 33), ('SKU-2', 10, 33);
DELETE FROM priv.inventory WHERE item = 'SKU-2' AND set_config('fencing.token', '33', true) IS NOT NULL;
GRANT SELECT ON priv.inventory TO regress_priv_reader;
-- C2: a domain-typed key column whose CHECK escalates
CREATE DOMAIN priv.kid AS int CHECK (public.regress_escalate(current_user::text));
CREATE TABLE priv.by_domain (id priv.kid PRIMARY KEY, fence fencing_token);
INSERT INTO priv.by_domain VALUES (1, 5);
-- ... and a domain-typed resource column
CREATE DOMAIN priv.shard AS text CHECK (public.regress_escalate(current_user::text));
CREATE TABLE priv.orders (id int PRIMARY KEY, shard priv.shard, fence fencing_token);
SELECT fencing_protect('priv.orders', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'regress-priv');
INSERT INTO priv.orders VALUES (1, 's1', 7);
GRANT SELECT ON priv.by_domain, priv.orders TO regress_priv_reader;
RESET SESSION AUTHORIZATION;

-- C1: a reader with only SELECT shadows pg_catalog.text (and an operator) in
-- pg_temp; the extension's internal statements never pick them up.
SET SESSION AUTHORIZATION regress_priv_reader;
CREATE FUNCTION pg_temp.pwn(x pg_catalog.text) RETURNS boolean LANGUAGE sql
    AS $$ SELECT public.regress_escalate('regress_priv_reader') $$;
CREATE DOMAIN pg_temp.text AS pg_catalog.text CHECK (pg_temp.pwn(VALUE));
CREATE DOMAIN pg_temp.name AS pg_catalog.name CHECK (pg_temp.pwn(VALUE::pg_catalog.text));
CREATE FUNCTION pg_temp.eq(pg_catalog.text, pg_catalog.text) RETURNS boolean LANGUAGE sql
    AS $$ SELECT public.regress_escalate('regress_priv_reader') $$;
CREATE OPERATOR pg_temp.= (LEFTARG = pg_catalog.text, RIGHTARG = pg_catalog.text,
                           FUNCTION = pg_temp.eq);
SET search_path = pg_temp, public, pg_catalog;
SELECT fencing_high_water('priv.inventory', '{"item": "SKU-1"}') AS live,
       fencing_high_water('priv.inventory', '{"item": "SKU-2"}') AS tombstone;
SELECT fencing_high_water('priv.orders', '{"shard": "s1"}') AS resource_hwm;
SELECT fencing_high_water('priv.by_domain', '{"id": 1}') AS domain_key;
SELECT fencing_resource_high_water('s1', 'regress-priv');
SELECT fencing_reset('priv.inventory');
SELECT fencing_protect('priv.inventory');
SELECT fencing_unprotect('priv.inventory');
SELECT count(*) AS listed FROM fencing_protected WHERE table_name::pg_catalog.text LIKE 'priv.%';
RESET search_path;
-- The shadowing objects must not outlive the attacker's part of this session.
DISCARD TEMP;
RESET SESSION AUTHORIZATION;
SELECT * FROM public.regress_supers;

-- C2: the table owner's own domain CHECKs run as the owner, in every function
-- that converts a key: high water, reset, row and resource scope.
SET SESSION AUTHORIZATION regress_priv_owner;
CREATE FUNCTION pg_temp.pwn(x pg_catalog.text) RETURNS boolean LANGUAGE sql
    AS $$ SELECT public.regress_escalate('regress_priv_owner') $$;
CREATE DOMAIN pg_temp.text AS pg_catalog.text CHECK (pg_temp.pwn(VALUE));
SET search_path = pg_temp, public, pg_catalog;
SELECT fencing_high_water('priv.by_domain', '{"id": 1}') AS domain_key;
SELECT fencing_reset('priv.by_domain', '{"id": 1}') AS reset_domain_key;
SELECT fencing_high_water('priv.orders', '{"shard": "s1"}') AS domain_resource;
SELECT fencing_reset('priv.orders', '{"shard": "s1"}') AS reset_domain_resource;
SELECT fencing_protect('priv.inventory', strict => false);
SELECT fencing_unprotect('priv.by_domain');
SELECT fencing_protect('priv.by_domain');
RESET search_path;
-- A domain over fencing_token is not a token column.
CREATE DOMAIN priv.tok AS fencing_token CHECK (public.regress_escalate(current_user::text));
CREATE TABLE priv.by_domain_token (id int PRIMARY KEY, fence priv.tok);
SELECT fencing_protect('priv.by_domain_token', token_column => 'fence');
DISCARD TEMP;
RESET SESSION AUTHORIZATION;
SELECT * FROM public.regress_supers;

-- Crash: key plus changes past 64 members on a wide table (any role with
-- UPDATE could reach it). Now an ordinary statement.
SELECT pg_catalog.format('CREATE TABLE priv.wide (id int PRIMARY KEY, %s, fence fencing_token)',
                         pg_catalog.string_agg(pg_catalog.format('c%s int', i), ', '))
  FROM pg_catalog.generate_series(1, 70) i \gexec
INSERT INTO priv.wide (id, fence) VALUES (1, 5);
UPDATE priv.wide SET fence = 5, c1 = 0, c2 = 0, c3 = 0, c4 = 0, c5 = 0, c6 = 0, c7 = 0, c8 = 0, c9 = 0,
    c10 = 0, c11 = 0, c12 = 0, c13 = 0, c14 = 0, c15 = 0, c16 = 0, c17 = 0, c18 = 0, c19 = 0,
    c20 = 0, c21 = 0, c22 = 0, c23 = 0, c24 = 0, c25 = 0, c26 = 0, c27 = 0, c28 = 0, c29 = 0,
    c30 = 0, c31 = 0, c32 = 0, c33 = 0, c34 = 0, c35 = 0, c36 = 0, c37 = 0, c38 = 0, c39 = 0,
    c40 = 0, c41 = 0, c42 = 0, c43 = 0, c44 = 0, c45 = 0, c46 = 0, c47 = 0, c48 = 0, c49 = 0,
    c50 = 0, c51 = 0, c52 = 0, c53 = 0, c54 = 0, c55 = 0, c56 = 0, c57 = 0, c58 = 0, c59 = 0,
    c60 = 0, c61 = 0, c62 = 0, c63 = 0, c64 = 0, c65 = 0, c66 = 0, c67 = 0, c68 = 0, c69 = 0,
    c70 = 0;
SELECT fenced_update('priv.wide', 6,
                     (SELECT pg_catalog.jsonb_object_agg('c' || i, 0)
                        FROM pg_catalog.generate_series(1, 70) i),
                     (SELECT pg_catalog.jsonb_object_agg('c' || i, 1)
                        FROM pg_catalog.generate_series(1, 70) i)) AS wide_update;
SELECT fenced_update('priv.wide', 6, '{"id": 1}', '{"c2": 2}') AS after_wide;
SELECT c1, c2, c70, fence FROM priv.wide;
-- The caller's privileges are checked before anything is planned.
SET SESSION AUTHORIZATION regress_priv_reader;
SELECT fenced_update('priv.wide', 7, '{"id": 1}', '{"c1": 1}');
SELECT fenced_delete('priv.wide', 7, '{"id": 1}');
SELECT fenced_upsert('priv.wide', 7, '{"id": 1}');
RESET SESSION AUTHORIZATION;

-- Resource namespaces (C7, C8): owned by role OID; a table joins only when its
-- owner is a member of the namespace's owner, a superuser caller included.
CREATE ROLE regress_priv_squatter;
CREATE SCHEMA sq AUTHORIZATION regress_priv_squatter;
SET SESSION AUTHORIZATION regress_priv_squatter;
CREATE TABLE sq.decoy (id int PRIMARY KEY, shard text, fence fencing_token);
-- 'default' belongs to the extension's owner: nobody can squat it.
SELECT fencing_protect('sq.decoy', scope => 'resource', resource_column => 'shard');
SELECT fencing_protect('sq.decoy', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'regress-orders');
RESET SESSION AUTHORIZATION;
SELECT name, owner FROM fencing.resource_namespace WHERE name LIKE 'regress-%' ORDER BY name;
CREATE TABLE public.shards (id int PRIMARY KEY, shard text, fence fencing_token);
-- A superuser cannot put a table of another owner into the squatter's namespace.
ALTER TABLE public.shards OWNER TO regress_priv_owner;
SELECT fencing_protect('public.shards', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'regress-orders');
-- ... the owner's own namespace works; the squatter cannot reset it.
SELECT fencing_protect('public.shards', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'regress-priv');
INSERT INTO public.shards VALUES (1, 's9', 100);
SET SESSION AUTHORIZATION regress_priv_squatter;
SELECT fencing_resource_reset('s9', 'regress-priv');
RESET SESSION AUTHORIZATION;
-- A rename does not free a namespace (C8).
ALTER ROLE regress_priv_owner RENAME TO regress_priv_owner2;
SET SESSION AUTHORIZATION regress_priv_squatter;
CREATE TABLE sq.claim (id int PRIMARY KEY, shard text, fence fencing_token);
SELECT fencing_protect('sq.claim', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'regress-priv');
SELECT fencing_resource_reset('s9', 'regress-priv');
RESET SESSION AUTHORIZATION;
ALTER ROLE regress_priv_owner2 RENAME TO regress_priv_owner;
SELECT name, owner FROM fencing.resource_namespace WHERE name LIKE 'regress-%' ORDER BY name;
-- fencing_reset through a table in a shared namespace needs the namespace's
-- owner too: a table owner who only joined cannot lower everyone's HWM.
CREATE ROLE regress_priv_member IN ROLE regress_priv_owner;
CREATE TABLE public.shards2 (id int PRIMARY KEY, shard text, fence fencing_token);
ALTER TABLE public.shards2 OWNER TO regress_priv_member;
SELECT fencing_protect('public.shards2', scope => 'resource', resource_column => 'shard',
                       resource_namespace => 'regress-priv');
REVOKE regress_priv_owner FROM regress_priv_member;
SET SESSION AUTHORIZATION regress_priv_member;
SELECT fencing_reset('public.shards2', '{"shard": "s9"}');
RESET SESSION AUTHORIZATION;
BEGIN; SET LOCAL fencing.token = 5; UPDATE public.shards SET fence = 5 WHERE id = 1; ROLLBACK;
-- NULL namespaces are an error, not 'default' (M13).
SELECT fencing_resource_high_water('x', NULL);
SELECT fencing_resource_reset('x', NULL);

-- A stale error for a writer without SELECT shows no key values (M6).
CREATE ROLE regress_priv_writer;
GRANT USAGE ON SCHEMA priv TO regress_priv_writer;
GRANT UPDATE, INSERT ON priv.inventory, priv.orders TO regress_priv_writer;
SET SESSION AUTHORIZATION regress_priv_writer;
UPDATE priv.inventory SET fence = 1;
INSERT INTO priv.inventory VALUES ('SKU-2', 1, 2);
INSERT INTO priv.orders VALUES (2, 's1', 1);
RESET SESSION AUTHORIZATION;
GRANT SELECT (item) ON priv.inventory TO regress_priv_writer;
SET SESSION AUTHORIZATION regress_priv_writer;
UPDATE priv.inventory SET fence = 1;
RESET SESSION AUTHORIZATION;

-- A JSON array for an array column (M12).
CREATE TABLE priv.arr (id int PRIMARY KEY, a int[], t text[], fence fencing_token);
INSERT INTO priv.arr VALUES (1, '{1}', '{x}', 1);
SELECT fenced_update('priv.arr', 2, '{"id": 1}', '{"a": [1, 2, null], "t": ["a\"b", "c,d"]}');
SELECT a, t FROM priv.arr;

-- fencing_protected is a security barrier view.
SELECT c.reloptions FROM pg_catalog.pg_class c WHERE c.oid = 'fencing_protected'::regclass;

SELECT * FROM public.regress_supers;
DROP SCHEMA sq CASCADE;
DROP SCHEMA priv CASCADE;
DROP TABLE public.shards, public.shards2;
DELETE FROM fencing.resource_namespace WHERE name LIKE 'regress-%';
DELETE FROM fencing.reset_log WHERE target LIKE 'priv.%' OR target LIKE 'public.shards%';
DROP VIEW public.regress_supers;
DROP FUNCTION public.regress_escalate(text);
DROP ROLE regress_priv_reader, regress_priv_owner, regress_priv_squatter, regress_priv_member,
          regress_priv_writer;
