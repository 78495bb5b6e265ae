"""The SQL the driver modules send ($n placeholders; psycopg's module turns
them into %s). Tokens go over as int8 parameters, which the server converts
to fencing_token by its implicit cast: exact up to 9223372036854775807, on
connections where the codecs are not registered too."""
import json

# The extension's type, by its schema (never by search_path alone).
EXTENSION_TYPE = """
SELECT t.oid::int8, t.typarray::int8
  FROM pg_catalog.pg_type t
  JOIN pg_catalog.pg_extension e ON e.extnamespace OPERATOR(pg_catalog.=) t.typnamespace
 WHERE e.extname OPERATOR(pg_catalog.=) 'fencing' AND t.typname OPERATOR(pg_catalog.=) 'fencing_token'"""
EXTENSION_SCHEMA = """
SELECT n.nspname FROM pg_catalog.pg_extension e
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
 WHERE e.extname OPERATOR(pg_catalog.=) 'fencing'"""

# set_config(..., true) is SET LOCAL with a parameter.
SET_TOKEN = "SELECT pg_catalog.set_config('fencing.token', $1, true)"

ACQUIRE = "SELECT fencing_acquire($1, $2, $3::text::interval, $4::text::interval, $5)::int8"
RENEW = "SELECT fencing_renew($1, $2::int8, $3::text::interval, $4)"
RELEASE = "SELECT fencing_release($1, $2::int8, $3)"
ACQUIRE_ALL = ("SELECT fencing_acquire_all($1::text[], $2, $3::text::interval, $4::text::interval, $5)"
               "::pg_catalog.int8[]")
CHECK = "SELECT fencing_check($1, $2::int8, $3)"

FENCED_UPDATE = "SELECT fenced_update($1::regclass, $2::int8, $3::jsonb, $4::jsonb)"
FENCED_DELETE = "SELECT fenced_delete($1::regclass, $2::int8, $3::jsonb)"
FENCED_UPSERT = "SELECT fenced_upsert($1::regclass, $2::int8, $3::jsonb)"

_POLICY = """
SELECT p.scope, p.strict, n.nspname::text, c.relname::text, p.resource_column::text,
       (SELECT pg_catalog.array_agg(a.attname::text)
          FROM pg_catalog.pg_index i
          JOIN pg_catalog.pg_attribute a ON a.attrelid OPERATOR(pg_catalog.=) i.indrelid
                                        AND a.attnum OPERATOR(pg_catalog.=) ANY (i.indkey)
         WHERE i.indrelid OPERATOR(pg_catalog.=) p.table_name AND i.indisprimary)
  FROM fencing_protected p
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) p.table_name
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
 WHERE p.table_name OPERATOR(pg_catalog.=) $1::regclass"""
_HWM_KEY = "SELECT fencing_high_water($1::regclass, $2::jsonb)::int8"
_HWM_TABLE = "SELECT fencing_high_water($1::regclass)::int8"


def interval(seconds):
    """Seconds (int/float/None) as an interval parameter's text."""
    return None if seconds is None else f"{float(seconds)} seconds"


def token_text(token):
    if isinstance(token, bool) or not isinstance(token, int):
        raise TypeError(f"a token is an int, not {type(token).__name__}")
    return str(int(token))


def _probe(table, token, key):
    """Why did a fenced_*() call write 0 rows? A generator: yields (sql,
    args), is sent each fetched row, returns the StaleTokenError fields when
    the HWM the call was judged against is above the token (or equal to it
    in strict mode), else None (no such row). A diagnosis after the fact: the
    refusal itself was the call's own atomic check. Row scope needs the key
    to be the primary key, resource scope to hold the resource column;
    otherwise no diagnosis (None)."""
    policy = yield _POLICY, (table,)
    if policy is None:
        return None
    scope, strict, schema, name, resource_column, pk = policy
    key = key or {}
    if scope == "row" and pk and set(pk) <= set(key):
        probe_key = {k: key[k] for k in pk}
        row = yield _HWM_KEY, (table, json.dumps(probe_key))
    elif scope == "resource" and resource_column in key:
        probe_key = {resource_column: key[resource_column]}
        row = yield _HWM_KEY, (table, json.dumps(probe_key))
    elif scope == "table":
        probe_key = None
        row = yield _HWM_TABLE, (table,)
    else:
        return None
    hwm = None if row is None else row[0]
    if hwm is None or hwm < token or (hwm == token and not strict):
        return None
    return {"schema": schema, "table": name, "key": None if probe_key is None else json.dumps(probe_key),
            "offered": int(token), "hwm": int(hwm), "strict": bool(strict)}


def _run(gen, fetch):
    try:
        sql, args = next(gen)
        while True:
            sql, args = gen.send(fetch(sql, args))
    except StopIteration as stop:
        return stop.value


def stale_probe(fetch, table, token, key):
    """_probe() with a sync fetch(sql, args) -> row; driver errors during
    the diagnosis give None (the call's count stands)."""
    try:
        return _run(_probe(table, token, key), fetch)
    except Exception:  # noqa: BLE001 - a diagnosis must not replace the result
        return None


async def stale_probe_async(fetch, table, token, key):
    gen = _probe(table, token, key)
    try:
        sql, args = next(gen)
        while True:
            sql, args = gen.send(await fetch(sql, args))
    except StopIteration as stop:
        return stop.value
    except Exception:  # noqa: BLE001
        return None
