"""The SQL the driver modules send ($n placeholders; psycopg's module turns
them into %s). Tokens go over as int8 parameters, which the server converts
to fencing_token by its implicit cast: exact up to 9223372036854775807, on
connections where the codecs are not registered too."""
import json
from typing import Any, Awaitable, Callable, Dict, Generator, MutableMapping, Optional, Sequence, Tuple, Type

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

# A lease statement's bound, for its own transaction only (never the session).
SET_TIMEOUT = "SELECT pg_catalog.set_config('statement_timeout', $1, true)"


def bounded_script(sql: str, seconds: float) -> str:
    """sql behind SET LOCAL statement_timeout, as ONE simple-query string (the
    driver binds the parameters client-side): the two statements run in one
    implicit transaction, so the bound covers sql and ends with it, and the
    whole costs one round trip."""
    return f"SET LOCAL statement_timeout = {max(1, int(seconds * 1000))}; {sql}"
ACQUIRE_MARGIN = 5.0  # an acquire is bounded by its wait plus this many seconds

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


def interval(seconds: Optional[float]) -> Optional[str]:
    """Seconds (int/float/None) as an interval parameter's text."""
    return None if seconds is None else f"{float(seconds)} seconds"


def token_text(token: int) -> str:
    if isinstance(token, bool) or not isinstance(token, int):
        raise TypeError(f"a token is an int, not {type(token).__name__}")
    return str(int(token))


def set_token(token: int) -> str:
    """The statement that sets the token for the transaction: a literal SET
    LOCAL, because Citus forwards SET LOCAL to its workers (with
    citus.propagate_set_commands = 'local') and never set_config(). SET takes
    no parameters, so the value is formatted from the int (token_text refuses
    anything else) and the statement is sent without any: the simple
    protocol, nothing prepared per token value."""
    return f"SET LOCAL fencing.token = '{token_text(token)}'"


def _probe(table: str, token: int,
           key: Optional[Dict[str, Any]]) -> Generator[Tuple[str, Tuple[Any, ...]], Any, Optional[Dict[str, Any]]]:
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


# From 1.5 the fenced DML functions have *_result siblings that report, in
# the same statement, rows written, rows refused as stale and the HWM that
# refused them; an older installed SQL version has only the plain ones.
HAS_RESULT = """
SELECT pg_catalog.to_regprocedure(pg_catalog.quote_ident(n.nspname)
         OPERATOR(pg_catalog.||) '.fenced_update_result(pg_catalog.regclass, '
         OPERATOR(pg_catalog.||) pg_catalog.quote_ident(n.nspname)
         OPERATOR(pg_catalog.||) '.fencing_token, pg_catalog.jsonb, pg_catalog.jsonb)') IS NOT NULL
  FROM pg_catalog.pg_extension e JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
 WHERE e.extname OPERATOR(pg_catalog.=) 'fencing'"""
_RESULT = """
WITH t AS (SELECT $1::regclass AS target)
SELECT r.written, r.stale, r.hwm::pg_catalog.int8, n.nspname::text, c.relname::text
  FROM t CROSS JOIN LATERAL {fn}(t.target, $2::int8, {json}) r
  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.target
  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace"""
RESULT_SQL = {
    "update": _RESULT.format(fn="fenced_update_result", json="$3::jsonb, $4::jsonb"),
    "delete": _RESULT.format(fn="fenced_delete_result", json="$3::jsonb"),
    "upsert": _RESULT.format(fn="fenced_upsert_result", json="$3::jsonb"),
}
PLAIN_SQL = {"update": FENCED_UPDATE, "delete": FENCED_DELETE, "upsert": FENCED_UPSERT}
DIAGNOSIS_FAILED = object()  # what a driver sends back when a diagnosis query failed


Steps = Generator[Tuple[str, Tuple[Any, ...], bool], Any, Tuple[Any, ...]]


def fenced_steps(cache: MutableMapping[Any, bool], conn: Any, kind: str, table: str, token: int,
                 key: Any, jargs: Tuple[Any, ...], raise_stale: bool) -> Steps:
    """One fenced_*() call as a generator shared by the drivers: yields
    (sql, args, diagnosis) and is sent each fetched row (a diagnosis query
    runs in a savepoint; when it fails the driver sends DIAGNOSIS_FAILED).
    Returns ("count", n) or ("stale", fields, written)."""
    has = cache.get(conn)
    if has is None:
        has = bool((yield HAS_RESULT, (), False)[0])
        cache[conn] = has
    args = (table, int(token)) + tuple(json.dumps(a) for a in jargs)
    if has:
        written, stale, hwm, schema, name = yield RESULT_SQL[kind], args, False
        if stale and raise_stale:
            return ("stale", {"schema": schema, "table": name, "key": json.dumps(key),
                              "offered": int(token), "hwm": hwm, "strict": hwm == int(token)},
                    written)
        return ("count", written)
    n = (yield PLAIN_SQL[kind], args, False)[0]
    if n or not raise_stale:
        return ("count", n)
    probe = _probe(table, token, key)
    try:
        sql, pargs = next(probe)
        while True:
            row = yield sql, pargs, True
            if row is DIAGNOSIS_FAILED:
                return ("count", 0)
            sql, pargs = probe.send(row)
    except StopIteration as stop:
        found = stop.value
    return ("count", 0) if found is None else ("stale", found, 0)


def drive(steps: Steps, fetch: Callable[[str, Tuple[Any, ...]], Any],
          diagnose: Callable[[str, Tuple[Any, ...]], Any]) -> Tuple[Any, ...]:
    """Runs fenced_steps() with a driver's fetch(sql, args) -> row and
    diagnose(sql, args) -> row or DIAGNOSIS_FAILED (in a savepoint)."""
    try:
        sql, args, diagnosis = next(steps)
        while True:
            sql, args, diagnosis = steps.send((diagnose if diagnosis else fetch)(sql, args))
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


async def drive_async(steps: Steps, fetch: Callable[[str, Tuple[Any, ...]], Awaitable[Any]],
                      diagnose: Callable[[str, Tuple[Any, ...]], Awaitable[Any]]) -> Tuple[Any, ...]:
    """drive() with coroutine functions."""
    try:
        sql, args, diagnosis = next(steps)
        while True:
            sql, args, diagnosis = steps.send(await (diagnose if diagnosis else fetch)(sql, args))
    except StopIteration as stop:
        return stop.value  # type: ignore[no-any-return]


def outcome(result: Tuple[Any, ...], stale_error: Any) -> int:
    """The count of a finished fenced_steps(), or its StaleTokenError (with
    .written: rows the same call did write, kept unless rolled back)."""
    if result[0] == "count":
        return int(result[1])
    _, fields, written = result
    err = stale_error._build(f"stale fencing token for table {fields['table']}: offered token "
                             f"{fields['offered']}, high-water mark {fields['hwm']}", **fields)
    err.written = written
    raise err
