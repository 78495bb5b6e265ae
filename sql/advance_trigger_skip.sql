-- fencing_advance of a key whose row a BEFORE UPDATE trigger of the table's
-- keeps from being updated (here: updates that leave the payload as it was
-- are skipped, a common trigger) returned true while the row kept its lower
-- token, by which its writers are judged: a writer at 16 got through after
-- an advance to 30. Refused instead (09000).
SET client_min_messages = warning;
CREATE TABLE trs (id int PRIMARY KEY, v text, fence fencing_token);
SELECT fencing_protect('trs');
BEGIN; SET LOCAL fencing.token = 15; INSERT INTO trs VALUES (5, 'x', 15); COMMIT;
CREATE FUNCTION trs_skip_same_payload() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.v IS NOT DISTINCT FROM OLD.v THEN
        RETURN NULL;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER skip_same BEFORE UPDATE ON trs FOR EACH ROW EXECUTE FUNCTION trs_skip_same_payload();
\set VERBOSITY terse
SELECT fencing_advance('trs', 30, '{"id": 5}') AS skipped_advanced;
\set VERBOSITY default
SELECT id, v, fence FROM trs;
-- A trigger that lowers the token column is refused alike.
CREATE OR REPLACE FUNCTION trs_skip_same_payload() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.fence := OLD.fence;
    RETURN NEW;
END $$;
\set VERBOSITY terse
SELECT fencing_advance('trs', 30, '{"id": 5}') AS lowered_advanced;
\set VERBOSITY default
-- Without the trigger the row is raised and the writer at 16 refused.
DROP TRIGGER skip_same ON trs;
SELECT fencing_advance('trs', 30, '{"id": 5}') AS advanced;
\set VERBOSITY terse
BEGIN; SET LOCAL fencing.token = 16; UPDATE trs SET v = 'stale at 16' WHERE id = 5; COMMIT;
\set VERBOSITY default
SELECT id, v, fence FROM trs;
DROP TABLE trs;
DROP FUNCTION trs_skip_same_payload();
