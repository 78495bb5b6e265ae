-- fencing_enable_retirement('jobs'): a quoted name without a cast resolves to
-- the namespace form. A name that is a fenced table's and no namespace in use
-- is refused instead of silently enabling a namespace called jobs.
CREATE TABLE jobs (id int PRIMARY KEY, tok fencing_token);
SELECT fencing_protect('jobs');
\set VERBOSITY default
SELECT fencing_enable_retirement('jobs');
SELECT fencing_enable_retirement('public.jobs');
\set VERBOSITY terse
-- Nothing was enabled by the refused calls.
SELECT count(*) FROM fencing.resource_floor WHERE namespace IN ('jobs', 'public.jobs');
-- The table, with the cast; and a namespace of that name, explicitly.
SELECT fencing_enable_retirement('jobs'::regclass);
SELECT enabled FROM fencing.tombstone_floor WHERE relid = 'jobs'::regclass;
SELECT fencing_enable_namespace_retirement('jobs');
SELECT enabled FROM fencing.resource_floor WHERE namespace = 'jobs';
-- Once the namespace is in use, the quoted name means it, as before.
SELECT fencing_enable_retirement('jobs', '1 day');
SELECT idle FROM fencing.resource_floor WHERE namespace = 'jobs';
-- Names that are no fenced table's work as before.
CREATE TABLE plain_jobs (id int PRIMARY KEY);
SELECT fencing_enable_retirement('plain_jobs');
SELECT fencing_enable_retirement('not a table');
SELECT namespace FROM fencing.resource_floor WHERE namespace IN ('plain_jobs', 'not a table') ORDER BY 1;
SELECT fencing_disable_retirement('jobs'::regclass);
SELECT fencing_disable_retirement('jobs');
SELECT fencing_disable_retirement('plain_jobs');
SELECT fencing_disable_retirement('not a table');
DROP TABLE jobs, plain_jobs;
