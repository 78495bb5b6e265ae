-- Trojans in the installing session's pg_temp, created by sec_trojan in the
-- same session (SET ROLE), as a pooled connection or an earlier
-- SECURITY DEFINER call could leave them. A relation or type in pg_temp is
-- searched before pg_catalog unless the search path lists pg_temp last, so
-- these shadow, for unqualified names: the catalogs the scripts read, the
-- extension's own tables, and the types. Functions and operators in pg_temp
-- are found only when named with pg_temp.
SET ROLE sec_trojan;
DO $plant$
DECLARE
    t text;
BEGIN
    -- Views shadowing catalogs and the extension's tables: reading one runs
    -- the trojan.
    FOREACH t IN ARRAY ARRAY['pg_index', 'pg_attribute', 'pg_type', 'pg_class',
                             'pg_namespace', 'pg_extension', 'pg_trigger', 'pg_proc',
                             'pg_depend', 'pg_roles', 'pg_authid']
    LOOP
        EXECUTE pg_catalog.format(
            'CREATE TEMP VIEW %I AS SELECT %s FROM pg_catalog.%I WHERE public.trojan_fire(%L)',
            t, (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname), ', '
                                             ORDER BY a.attnum)
                  FROM pg_catalog.pg_attribute a
                 WHERE a.attrelid OPERATOR(pg_catalog.=) ('pg_catalog.' || t)::pg_catalog.regclass
                   AND a.attnum OPERATOR(pg_catalog.>) 0
                   AND a.atttypid OPERATOR(pg_catalog.<>) 'pg_catalog.anyarray'::pg_catalog.regtype),
            t, 'temp view ' || t);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['protected', 'resource_hwm', 'resource_namespace', 'table_hwm',
                             'row_tombstone', 'reset_log', 'lease']
    LOOP
        EXECUTE pg_catalog.format(
            'CREATE TEMP VIEW %I AS SELECT public.trojan_fire(%L) AS relid',
            t, 'temp view ' || t);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['text', 'name', 'oid', 'int8', 'int4', 'int2', 'bool', 'regclass',
                             'regrole', 'regtype', 'timestamptz', 'interval', 'jsonb', 'char']
    LOOP
        EXECUTE pg_catalog.format(
            'CREATE DOMAIN pg_temp.%I AS pg_catalog.%I CHECK (public.trojan_fire(%L))',
            t, t, 'domain pg_temp.' || t);
    END LOOP;
END
$plant$;
CREATE FUNCTION pg_temp.now() RETURNS timestamptz LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('pg_temp.now()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION pg_temp.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('pg_temp.clock_timestamp()'); RETURN pg_catalog.clock_timestamp(); END $$;
CREATE FUNCTION pg_temp.trojan_eq(a text, b text) RETURNS bool LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('operator pg_temp.='); RETURN a OPERATOR(pg_catalog.=) b; END $$;
CREATE OPERATOR pg_temp.= (LEFTARG = text, RIGHTARG = text, FUNCTION = pg_temp.trojan_eq);
RESET ROLE;
