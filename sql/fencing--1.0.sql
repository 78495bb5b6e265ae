-- fencing 1.0
\echo Use "CREATE EXTENSION fencing" to load this file. \quit

-- Security (PostgreSQL docs, "Security Considerations for Extension Scripts"):
-- every object reference below is schema-qualified (pg_catalog or
-- @extschema@), so the script does not depend on the caller's search_path.

----------------------------------------------------------------------------
-- The fencing_token type: a non-negative 64-bit ordered value.
----------------------------------------------------------------------------
CREATE TYPE @extschema@.fencing_token;

CREATE FUNCTION @extschema@.fencing_token_in(pg_catalog.cstring)
    RETURNS @extschema@.fencing_token
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_out(@extschema@.fencing_token)
    RETURNS pg_catalog.cstring
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_recv(pg_catalog.internal)
    RETURNS @extschema@.fencing_token
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_send(@extschema@.fencing_token)
    RETURNS pg_catalog.bytea
    AS 'MODULE_PATHNAME' LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;

CREATE TYPE @extschema@.fencing_token (
    INPUT = @extschema@.fencing_token_in,
    OUTPUT = @extschema@.fencing_token_out,
    RECEIVE = @extschema@.fencing_token_recv,
    SEND = @extschema@.fencing_token_send,
    INTERNALLENGTH = 8,
    PASSEDBYVALUE,
    ALIGNMENT = double,
    STORAGE = plain,
    CATEGORY = 'N'
);
COMMENT ON TYPE @extschema@.fencing_token IS
    'fencing token: an opaque, ordered, non-negative 64-bit value (decimal or 0x hex input)';

-- Comparison, hashing and sort support share the int8 representation, so they
-- are PostgreSQL's own int8 functions, bound by their internal names.
CREATE FUNCTION @extschema@.fencing_token_eq(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8eq' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_ne(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8ne' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_lt(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8lt' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_le(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8le' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_gt(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8gt' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_ge(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.bool AS 'int8ge' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_cmp(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS pg_catalog.int4 AS 'btint8cmp' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_sortsupport(pg_catalog.internal)
    RETURNS pg_catalog.void AS 'btint8sortsupport' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_hash(@extschema@.fencing_token)
    RETURNS pg_catalog.int4 AS 'hashint8' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_hash_extended(@extschema@.fencing_token, pg_catalog.int8)
    RETURNS pg_catalog.int8 AS 'hashint8extended' LANGUAGE internal IMMUTABLE STRICT LEAKPROOF PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_smaller(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS @extschema@.fencing_token AS 'int8smaller' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_larger(@extschema@.fencing_token, @extschema@.fencing_token)
    RETURNS @extschema@.fencing_token AS 'int8larger' LANGUAGE internal IMMUTABLE STRICT PARALLEL SAFE;

CREATE OPERATOR @extschema@.= (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_eq,
    COMMUTATOR = OPERATOR(@extschema@.=), NEGATOR = OPERATOR(@extschema@.<>),
    RESTRICT = pg_catalog.eqsel, JOIN = pg_catalog.eqjoinsel, HASHES, MERGES);
CREATE OPERATOR @extschema@.<> (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_ne,
    COMMUTATOR = OPERATOR(@extschema@.<>), NEGATOR = OPERATOR(@extschema@.=),
    RESTRICT = pg_catalog.neqsel, JOIN = pg_catalog.neqjoinsel);
CREATE OPERATOR @extschema@.< (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_lt,
    COMMUTATOR = OPERATOR(@extschema@.>), NEGATOR = OPERATOR(@extschema@.>=),
    RESTRICT = pg_catalog.scalarltsel, JOIN = pg_catalog.scalarltjoinsel);
CREATE OPERATOR @extschema@.<= (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_le,
    COMMUTATOR = OPERATOR(@extschema@.>=), NEGATOR = OPERATOR(@extschema@.>),
    RESTRICT = pg_catalog.scalarlesel, JOIN = pg_catalog.scalarlejoinsel);
CREATE OPERATOR @extschema@.> (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_gt,
    COMMUTATOR = OPERATOR(@extschema@.<), NEGATOR = OPERATOR(@extschema@.<=),
    RESTRICT = pg_catalog.scalargtsel, JOIN = pg_catalog.scalargtjoinsel);
CREATE OPERATOR @extschema@.>= (
    LEFTARG = @extschema@.fencing_token, RIGHTARG = @extschema@.fencing_token,
    FUNCTION = @extschema@.fencing_token_ge,
    COMMUTATOR = OPERATOR(@extschema@.<=), NEGATOR = OPERATOR(@extschema@.<),
    RESTRICT = pg_catalog.scalargesel, JOIN = pg_catalog.scalargejoinsel);

CREATE OPERATOR CLASS @extschema@.fencing_token_ops
    DEFAULT FOR TYPE @extschema@.fencing_token USING btree AS
        OPERATOR 1 @extschema@.<,
        OPERATOR 2 @extschema@.<=,
        OPERATOR 3 @extschema@.=,
        OPERATOR 4 @extschema@.>=,
        OPERATOR 5 @extschema@.>,
        FUNCTION 1 @extschema@.fencing_token_cmp(@extschema@.fencing_token, @extschema@.fencing_token),
        FUNCTION 2 @extschema@.fencing_token_sortsupport(pg_catalog.internal);

CREATE OPERATOR CLASS @extschema@.fencing_token_hash_ops
    DEFAULT FOR TYPE @extschema@.fencing_token USING hash AS
        OPERATOR 1 @extschema@.=,
        FUNCTION 1 @extschema@.fencing_token_hash(@extschema@.fencing_token),
        FUNCTION 2 @extschema@.fencing_token_hash_extended(@extschema@.fencing_token, pg_catalog.int8);

CREATE AGGREGATE @extschema@.min(@extschema@.fencing_token) (
    SFUNC = @extschema@.fencing_token_smaller, STYPE = @extschema@.fencing_token,
    COMBINEFUNC = @extschema@.fencing_token_smaller, SORTOP = OPERATOR(@extschema@.<),
    PARALLEL = SAFE);
CREATE AGGREGATE @extschema@.max(@extschema@.fencing_token) (
    SFUNC = @extschema@.fencing_token_larger, STYPE = @extschema@.fencing_token,
    COMBINEFUNC = @extschema@.fencing_token_larger, SORTOP = OPERATOR(@extschema@.>),
    PARALLEL = SAFE);

-- Casts. Integers convert implicitly so "VALUES (34)", a function argument 34
-- and "WHERE fence < 35" all work with no operator ambiguity: the reverse
-- direction is explicit only, so a mixed comparison has exactly one candidate.
CREATE FUNCTION @extschema@.fencing_token(pg_catalog.int8)
    RETURNS @extschema@.fencing_token AS 'MODULE_PATHNAME', 'fencing_token_from_int8'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token(pg_catalog.int4)
    RETURNS @extschema@.fencing_token AS 'MODULE_PATHNAME', 'fencing_token_from_int4'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE CAST (pg_catalog.int8 AS @extschema@.fencing_token)
    WITH FUNCTION @extschema@.fencing_token(pg_catalog.int8) AS IMPLICIT;
CREATE CAST (pg_catalog.int4 AS @extschema@.fencing_token)
    WITH FUNCTION @extschema@.fencing_token(pg_catalog.int4) AS IMPLICIT;
-- Same bits, every token is a valid bigint.
CREATE CAST (@extschema@.fencing_token AS pg_catalog.int8) WITHOUT FUNCTION;

-- ZooKeeper zxid helpers: zxid = (epoch << 32) | counter.
CREATE FUNCTION @extschema@.fencing_token_epoch(@extschema@.fencing_token)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_token_zxid_epoch'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_counter(@extschema@.fencing_token)
    RETURNS pg_catalog.int8 AS 'MODULE_PATHNAME', 'fencing_token_zxid_counter'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
CREATE FUNCTION @extschema@.fencing_token_from_zxid(epoch pg_catalog.int8, counter pg_catalog.int8)
    RETURNS @extschema@.fencing_token AS 'MODULE_PATHNAME', 'fencing_token_from_zxid'
    LANGUAGE C IMMUTABLE STRICT PARALLEL SAFE;
COMMENT ON FUNCTION @extschema@.fencing_token_epoch(@extschema@.fencing_token) IS
    'ZooKeeper zxid epoch: the high 32 bits of the token';
COMMENT ON FUNCTION @extschema@.fencing_token_counter(@extschema@.fencing_token) IS
    'ZooKeeper zxid counter: the low 32 bits of the token';
COMMENT ON FUNCTION @extschema@.fencing_token_from_zxid(pg_catalog.int8, pg_catalog.int8) IS
    'builds a token from a ZooKeeper zxid epoch and counter';

-- The extension's own state lives in its own schema, out of the user's way.
CREATE SCHEMA fencing;
REVOKE ALL ON SCHEMA fencing FROM PUBLIC;
