#!/usr/bin/python3
"""Clients of the fencing extension behind PgBouncer (started by test/pooler/run.sh).

Every pool has default_pool_size = 1, so all the clients of one pool share one
server connection, one after the other. Three kinds of client meet there:

  A  a stale holder that loses its token: SET LOCAL in autocommit, or a
     session-level SET with its old token;
  B  the new holder: it writes correctly (SET LOCAL inside its transaction,
     set_config(..., true), fenced_update()), and now and then also sets its
     token for the session, the habit that used to leak it to the next client;
  C  a client with no token at all.

Every write to the test tables is logged by an AFTER trigger (who wrote, the
token it meant to write with, the row's HWM before and after). A check then
reads that log: an accepted write always carries its own writer's token, never
one below the HWM at the time, and no write by A or C is ever accepted.

Environment: PGHOST/PGPORT (the scratch cluster, as superuser postgres),
POOLER_BARE_PORT, POOLER_REC_PORT (the two PgBouncers; see run.sh).
"""
import os
import random
import re
import subprocess
import sys
import threading
import time

import psycopg
from psycopg.types.json import Jsonb

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from tap import finish, report  # noqa: E402

BOUNCERS = {"bare": int(os.environ["POOLER_BARE_PORT"]), "recommended": int(os.environ["POOLER_REC_PORT"])}
STRESS_SECONDS = float(os.environ.get("POOLER_STRESS_SECONDS", "3"))
REFUSED = ("TF001", "TF002")


def direct():
    return psycopg.connect(dbname="atk", autocommit=True)


def pooled(bouncer, mode, **kw):
    """A client of one pool (mode: tx, stmt, sess). prepare_threshold=None: every
    parameterized query goes out as the unnamed statement of the extended protocol."""
    kw.setdefault("prepare_threshold", None)
    for attempt in range(50):
        try:
            return psycopg.connect(host="127.0.0.1", port=BOUNCERS[bouncer], dbname=mode, user="app",
                                   autocommit=True, **kw)
        except psycopg.OperationalError:
            if attempt == 49:
                raise
            time.sleep(0.1)


def outcome(conn, sql, params=None):
    """'ok' or the SQLSTATE the statement failed with."""
    try:
        conn.execute(sql, params)
        return "ok"
    except psycopg.Error as e:
        return e.sqlstate or type(e).__name__


def error_of(conn, sql, params=None):
    try:
        conn.execute(sql, params)
        return None
    except psycopg.Error as e:
        return e


def psql(bouncer, mode, *commands):
    """Runs psql against a pool, one -c (one simple-query message) per command;
    returns the SQLSTATEs of the errors, in order, and the output."""
    args = ["psql", "-X", "-q", "-A", "-t", "-v", "VERBOSITY=verbose", "-h", "127.0.0.1", "-p",
            str(BOUNCERS[bouncer]), "-U", "app", "-d", mode]
    for c in commands:
        args += ["-c", c]
    p = subprocess.run(args, capture_output=True, text=True, timeout=30)
    return re.findall(r"^ERROR:  ([0-9A-Z]{5}):", p.stderr, re.M), p.stdout + p.stderr


def upd(table, id_, writer, intended, stock=1):
    """The UPDATE a client sends: it names its writer and the token it means to
    write with, so the audit log can tell whose token fenced it."""
    intended_sql = "NULL" if intended is None else str(int(intended))
    return (f"UPDATE {table} SET stock = {int(stock)}, writer = '{writer}', intended = {intended_sql} "
            f"WHERE id = {int(id_)}")


def fenced_update_sql(table):
    return f"SELECT fenced_update('{table}', %s, %s, %s)"


def fu_args(token, id_, writer, stock=1):
    return (token, Jsonb({"id": id_}), Jsonb({"stock": stock, "writer": writer, "intended": token}))


def fu_series(cur, id_, sql=None, tokens=((1, "B"), (0, "A"), (2, "B")), base=34):
    """fenced_update() with a fresh, a stale and a fresher token (offsets from
    base): the rows written by each call, [1, 0, 1] when fencing works."""
    sql = sql or fenced_update_sql("inv_req")
    return [cur.execute(sql, fu_args(base + t, id_, w)).fetchone()[0] for t, w in tokens]


_next_id = [100]


def new_row(table, fence, writer="seed"):
    _next_id[0] += 1
    id_ = _next_id[0]
    with direct() as d:
        d.execute(f"INSERT INTO {table} (id, stock, fence, writer, intended) VALUES (%s, 10, %s, %s, %s)",
                  (id_, fence, writer, fence))
    return id_


def row(table, id_):
    with direct() as d:
        return d.execute(f"SELECT fence::bigint, writer FROM {table} WHERE id = %s", (id_,)).fetchone()


def audit_violations(table, ids):
    """Accepted writes (logged by the AFTER trigger) that carried another client's
    token, no token, or a token below the row's HWM at the time."""
    with direct() as d:
        return d.execute(
            """SELECT seq, id, writer, intended, old_fence, new_fence FROM audit
                WHERE tbl = %s AND id = ANY(%s) AND op = 'UPDATE'
                  AND (intended IS NULL OR new_fence IS DISTINCT FROM intended
                       OR intended < old_fence OR writer !~ '^B')
                ORDER BY seq""", (table, list(ids))).fetchall()


def report_log(where, ids, what="the log holds only B's writes", table="inv_req", extra=True):
    bad = audit_violations(table, ids)
    report(not bad and extra, f"{where}: {what}" + (f": {bad}" if bad else ""))


def accepted_writes(table, ids):
    with direct() as d:
        return d.execute("SELECT count(*) FROM audit WHERE tbl = %s AND id = ANY(%s) AND op = 'UPDATE'",
                         (table, list(ids))).fetchone()[0]


def reset_pool(bouncer, mode):
    """Clears what an earlier case left on the pool's one server connection."""
    with pooled(bouncer, mode) as c:
        c.execute("RESET fencing.token")


def setup():
    with direct() as d:
        d.execute("""
            CREATE TABLE audit (seq bigserial PRIMARY KEY, tbl text, op text, id int, writer text,
                                intended bigint, old_fence bigint, new_fence bigint);
            CREATE FUNCTION audit_write() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                INSERT INTO audit (tbl, op, id, writer, intended, old_fence, new_fence)
                VALUES (TG_TABLE_NAME, TG_OP, NEW.id, NEW.writer, NEW.intended,
                        CASE WHEN TG_OP = 'UPDATE' THEN OLD.fence::bigint END, NEW.fence::bigint);
                RETURN NULL;
            END $$;
            -- inv_req: opened with require_token => true, explicitly.
            -- inv_def: fenced by declaring its token column, default policy.
            CREATE TABLE inv_req (id int PRIMARY KEY, stock int, fence fencing_token, writer text, intended bigint);
            SELECT fencing_protect('inv_req', require_token => true);
            CREATE TABLE inv_def (id int PRIMARY KEY, stock int, fence fencing_token, writer text, intended bigint);
            CREATE TRIGGER audit AFTER INSERT OR UPDATE ON inv_req FOR EACH ROW EXECUTE FUNCTION audit_write();
            CREATE TRIGGER audit AFTER INSERT OR UPDATE ON inv_def FOR EACH ROW EXECUTE FUNCTION audit_write();
            GRANT SELECT, INSERT, UPDATE, DELETE ON inv_req, inv_def TO app;
            GRANT INSERT ON audit TO app;
            GRANT USAGE ON SEQUENCE audit_seq_seq TO app;
        """)


# --------------------------------------------------------------------------
def shared_connection(bouncer, mode):
    conns = [pooled(bouncer, mode) for _ in range(3)]
    pids = {c.execute("SELECT pg_backend_pid()").fetchone()[0] for c in conns}
    for c in conns:
        c.close()
    report(len(pids) == 1, f"{bouncer}/{mode}: clients A, B and C share one server connection (pids {sorted(pids)})")


def write_right(conn, mode, table, id_, writer, token):
    """B's correct write for the pool mode: a transaction with SET LOCAL
    (transaction and session pooling), or one simple-query message (statement)."""
    if mode == "stmt":
        return outcome(conn, f"SET LOCAL fencing.token = {int(token)}; " + upd(table, id_, writer, token))
    try:
        with conn.transaction():
            conn.execute(f"SET LOCAL fencing.token = {int(token)}")
            conn.execute(upd(table, id_, writer, token))
        return "ok"
    except psycopg.Error as e:
        return e.sqlstate


def leak(bouncer, mode, table="inv_req"):
    """B sets its token for the session, writes, goes on, disconnects; A and C
    come after it on the same server connection."""
    where = f"{bouncer}/{mode}"
    reset_pool(bouncer, mode)
    id_ = new_row(table, 33, "A0")
    b = pooled(bouncer, mode)
    b.execute("SET fencing.token = 34")
    e = error_of(b, upd(table, id_, "B-session", 34))
    report(e is not None and e.sqlstate == "TF002",
           f"{where}: B's write with a session-level SET fencing.token is refused with TF002 "
           f"(got {e.sqlstate if e else 'accepted'})")
    if e is not None and bouncer == "bare" and mode != "sess":
        report("session" in (e.diag.message_primary or "") + (e.diag.message_detail or ""),
               f"{where}: the TF002 says the token was set for the session: {e.diag.message_primary!r}")
    report(write_right(b, mode, table, id_, "B", 34) == "ok", f"{where}: B's SET LOCAL write with 34 is accepted")

    c = pooled(bouncer, mode)
    got = outcome(c, upd(table, id_, "C", None, stock=0))
    report(got == "TF002", f"{where}: C (no token) after B's session SET, B still connected: TF002 (got {got})")
    a = pooled(bouncer, mode)
    set_local = outcome(a, "SET LOCAL fencing.token = 33")
    got = outcome(a, upd(table, id_, "A", 33, stock=-100))
    report(got in REFUSED, f"{where}: stale A, SET LOCAL 33 in autocommit (it got {set_local}) then UPDATE: "
                           f"refused (got {got})")
    report(set_local == "25P01", f"{where}: stale A's SET LOCAL in autocommit is an error, 25P01 (got {set_local})")
    b.close()
    got = outcome(c, upd(table, id_, "C", None, stock=0))
    report(got == "TF002", f"{where}: C after B disconnected: TF002 (got {got})")
    got = outcome(a, upd(table, id_, "A", 33, stock=-101))
    report(got in REFUSED, f"{where}: stale A again after B disconnected: refused (got {got})")
    a.execute("SET fencing.token = 33")
    got = outcome(a, upd(table, id_, "A", 33, stock=-102))
    report(got in REFUSED, f"{where}: stale A with a session-level SET 33: refused (got {got})")
    a.execute("RESET fencing.token")
    got = outcome(c, upd(table, id_, "C", None, stock=0))
    report(got == "TF002", f"{where}: C after stale A's session SET: TF002 (got {got})")
    a.close()
    c.close()
    bad = audit_violations(table, [id_])
    report(not bad and row(table, id_) == (34, "B"),
           f"{where}: every accepted write carried its own token, at or above the HWM; the row is B's at 34"
           + (f": {bad}" if bad else f" (row {row(table, id_)})"))


def leak_session_mode(bouncer):
    """Session pooling: B sets a session token and disconnects; C is handed B's
    server connection next."""
    where = f"{bouncer}/sess"
    reset_pool(bouncer, "sess")
    id_ = new_row("inv_req", 34)
    with pooled(bouncer, "sess") as b:
        pid_b = b.execute("SELECT pg_backend_pid()").fetchone()[0]
        b.execute("SET fencing.token = 35")
    with pooled(bouncer, "sess") as c:
        pid_c = c.execute("SELECT pg_backend_pid()").fetchone()[0]
        got = outcome(c, upd("inv_req", id_, "C", None, stock=0))
    report(pid_b == pid_c and got == "TF002",
           f"{where}: C on the server connection B left with a session token: TF002 (got {got}, same backend "
           f"{pid_b == pid_c})")
    with pooled(bouncer, "sess") as a:
        a.execute("SET fencing.token = 36")  # the next client, with a token not yet issued to it
        got = outcome(a, upd("inv_req", id_, "B-session", 36))
    report(got == "TF002", f"{where}: a session-level SET is refused in session pooling too (got {got})")
    report_log(where, [id_], "no write accepted", extra=accepted_writes("inv_req", [id_]) == 0)


def column_token_after_stray(bouncer, mode):
    """B leaves a session-level SET fencing.token on the server connection and
    disconnects. X, the next client, carries its own token in the token column
    (or through fenced_update(), or SET LOCAL): judged by that token alone. Only
    a write with nothing but B's stray token gets TF002, saying where it came from."""
    where = f"{bouncer}/{mode}"
    reset_pool(bouncer, mode)
    id_ = new_row("inv_req", 40)
    with pooled(bouncer, mode) as b:
        pid_b = b.execute("SELECT pg_backend_pid()").fetchone()[0]
        b.execute("SET fencing.token = 45")
    with pooled(bouncer, mode) as x:
        pid_x = x.execute("SELECT pg_backend_pid()").fetchone()[0]
        stray = x.execute("SHOW fencing.token").fetchone()[0]
        col = outcome(x, "UPDATE inv_req SET stock = 1, writer = 'B-col', intended = 41, fence = 41 WHERE id = %s",
                      (id_,))
        stale = outcome(x, "UPDATE inv_req SET stock = -1, writer = 'A-col', intended = 40, fence = 40 "
                           "WHERE id = %s", (id_,))
        fu = x.execute(fenced_update_sql("inv_req"), fu_args(42, id_, "B-fu")).fetchone()[0]
        tx = write_right(x, mode, "inv_req", id_, "B-tx", 43)
        bare = error_of(x, upd("inv_req", id_, "C", None, stock=0))
    same = pid_b == pid_x
    report(col == "ok" and stale == "TF001" and fu == 1 and tx == "ok" and row("inv_req", id_) == (43, "B-tx"),
           f"{where}: after B left a session token ({stray!r} on the same backend: {same}), X's token-column write "
           f"is accepted, a stale one TF001, fenced_update() and SET LOCAL accepted "
           f"(got {col}, {stale}, {fu}, {tx}, row {row('inv_req', id_)})")
    got = bare.sqlstate if bare is not None else "accepted"
    detail = (bare.diag.message_detail or "") if bare is not None else ""
    report(got == "TF002" and (stray == "" or "earlier transaction" in detail),
           f"{where}: X's write with no token of its own: TF002"
           + (", the DETAIL says the token was left by an earlier transaction" if stray else "")
           + f" (got {got}: {detail[:80]!r})")
    report_log(where, [id_], "the log holds only writes with their own token, at or above the HWM")


def role_setting(bouncer):
    """ALTER ROLE ... IN DATABASE ... SET fencing.token: every server connection
    opened for the role starts with that token (DISCARD ALL puts it back). It must
    fence nobody's write."""
    where = f"{bouncer}/role"
    id_ = new_row("inv_req", 34)
    with direct() as d:
        d.execute("ALTER ROLE app IN DATABASE atk SET fencing.token = '50'")
    try:
        with pooled(bouncer, "role") as c:
            shown = c.execute("SHOW fencing.token").fetchone()[0]
            first = outcome(c, upd("inv_req", id_, "C", None, 0))
            second = outcome(c, upd("inv_req", id_, "C", None, 0))
            # Inside a transaction, RESET, SET ... TO DEFAULT and RESET ALL bring
            # the role's token back: still a session token.
            resets = []
            for reset in ("RESET fencing.token", "SET LOCAL fencing.token = 51; SET LOCAL fencing.token TO DEFAULT",
                          "RESET ALL"):
                resets.append(outcome(c, f"BEGIN; {reset}; {upd('inv_req', id_, 'C', None, 0)}; COMMIT"))
                c.execute("ROLLBACK")
    finally:
        with direct() as d:
            d.execute("ALTER ROLE app IN DATABASE atk RESET fencing.token")
    report(shown == "50" and first == "TF002" and second == "TF002",
           f"{where}: a server connection that starts with the role's fencing.token = 50: C's writes get TF002 "
           f"(token shown {shown!r}, got {first}, {second})")
    report(resets == ["TF002"] * 3,
           f"{where}: RESET, SET LOCAL ... TO DEFAULT and RESET ALL inside C's transaction bring back the role's "
           f"token, and C's write still gets TF002 (got {', '.join(resets)})")
    report_log(where, [id_], "no write accepted", extra=accepted_writes("inv_req", [id_]) == 0)


def default_policy(bouncer, mode):
    """A table fenced by declaring its token column, default policy: C's write
    without a token is refused, and so is stale A's SET LOCAL in autocommit."""
    where = f"{bouncer}/{mode}"
    reset_pool(bouncer, mode)
    id_ = new_row("inv_def", 34)
    with pooled(bouncer, mode) as c:
        got = outcome(c, upd("inv_def", id_, "C", None, stock=0))
        report(got == "TF002", f"{where}: C (no token) on a table fenced by its declared column: TF002 (got {got})")
        outcome(c, "SET LOCAL fencing.token = 33")
        got = outcome(c, upd("inv_def", id_, "A", 33, stock=-1))
        report(got in REFUSED, f"{where}: stale A's SET LOCAL 33 in autocommit, then UPDATE, on that table: refused "
                               f"(got {got})")
    report_log(where, [id_], "no unfenced or stale write accepted on the declared table", "inv_def")


def discard_all(bouncer, mode):
    """DISCARD ALL sent by a client between B's session SET and C's write, and
    the patterns still working after it (fenced_update's kept plans replanned)."""
    where = f"{bouncer}/{mode}"
    reset_pool(bouncer, mode)
    id_ = new_row("inv_req", 34)
    with pooled(bouncer, mode) as b, pooled(bouncer, mode) as x, pooled(bouncer, mode) as c:
        n = b.execute(fenced_update_sql("inv_req"), fu_args(35, id_, "B")).fetchone()[0]
        b.execute("SET fencing.token = 35")
        x.execute("DISCARD ALL")
        got = outcome(c, upd("inv_req", id_, "C", None))
        n2 = b.execute(fenced_update_sql("inv_req"), fu_args(36, id_, "B")).fetchone()[0]
        n3 = c.execute(fenced_update_sql("inv_req"), fu_args(35, id_, "C-stale")).fetchone()[0]
    report(n == 1 and got == "TF002" and n2 == 1 and n3 == 0,
           f"{where}: DISCARD ALL between B's session SET and C: C gets TF002, fenced_update() keeps working "
           f"(1, {got}, 1, stale 0: got {n}, {n2}, {n3})")


# --------------------------------------------------------------------------
def patterns_transaction(bouncer):
    where = f"{bouncer}/tx"
    reset_pool(bouncer, "tx")
    id_ = new_row("inv_req", 34)
    with pooled(bouncer, "tx") as b, pooled(bouncer, "tx") as other:
        report(write_right(b, "tx", "inv_req", id_, "B", 35) == "ok",
               f"{where}: BEGIN; SET LOCAL fencing.token = 35; UPDATE; COMMIT is accepted")
        shown = other.execute("SHOW fencing.token").fetchone()[0]
        report(shown == "", f"{where}: the next client on the server connection sees no token (got {shown!r})")
        with b.transaction():
            b.execute("SELECT set_config('fencing.token', %s, true)", ("36",))
            b.execute("UPDATE inv_req SET stock = %s, writer = %s, intended = %s WHERE id = %s", (2, "B", 36, id_))
        report(row("inv_req", id_) == (36, "B"),
               f"{where}: BEGIN; SELECT set_config('fencing.token', $1, true); UPDATE ... $n; COMMIT is accepted")
        got = "ok"
        try:
            with other.transaction():
                other.execute("SELECT set_config('fencing.token', %s, true)", ("35",))
                other.execute("UPDATE inv_req SET stock = %s, writer = %s, intended = %s WHERE id = %s",
                              (-1, "A", 35, id_))
        except psycopg.Error as e:
            got = e.sqlstate
        report(got == "TF001", f"{where}: the same with a stale token: TF001 (got {got})")
        n = fu_series(b, id_, base=36)
        report(n == [1, 0, 1], f"{where}: fenced_update() as an unnamed parameterized statement: 1, stale 0, 1 (got {n})")
        with b.transaction():
            b.execute("PREPARE fu (fencing_token, jsonb, jsonb) AS SELECT fenced_update('inv_req', $1, $2, $3)")
            # EXECUTE takes no protocol parameters: the client binds them into the text.
            cur = psycopg.ClientCursor(b)
            n = fu_series(cur, id_, "EXECUTE fu (%s, %s, %s)", base=38)
            b.execute("DEALLOCATE fu")
        report(n == [1, 0, 1], f"{where}: SQL-level PREPARE/EXECUTE of fenced_update() inside one transaction: "
                               f"1, stale 0, 1 (got {n})")
    report_log(where, [id_], "the log holds only B's writes, the row is B's at 40",
               extra=row("inv_req", id_) == (40, "B"))


def patterns_statement(bouncer):
    where = f"{bouncer}/stmt"
    reset_pool(bouncer, "stmt")
    id_ = new_row("inv_req", 34)
    errs, _ = psql(bouncer, "stmt", f"SET LOCAL fencing.token = 35; {upd('inv_req', id_, 'B', 35)}")
    report(errs == [] and row("inv_req", id_) == (35, "B"),
           f"{where}: 'SET LOCAL fencing.token = 35; UPDATE ...' as one message is accepted (errors {errs})")
    errs, _ = psql(bouncer, "stmt", f"SET LOCAL fencing.token = 34; {upd('inv_req', id_, 'A', 34, -1)}")
    report(errs == ["TF001"], f"{where}: the same message with a stale token: TF001 (got {errs})")
    errs, _ = psql(bouncer, "stmt",
                   f"SELECT set_config('fencing.token', '36', true); {upd('inv_req', id_, 'B', 36)}")
    report(errs == [] and row("inv_req", id_) == (36, "B"),
           f"{where}: 'SELECT set_config(..., true); UPDATE ...' as one message is accepted (errors {errs})")
    errs, _ = psql(bouncer, "stmt", "SET LOCAL fencing.token = 37", upd("inv_req", id_, "A", 37, -2))
    report(errs and errs[-1] in REFUSED and row("inv_req", id_) == (36, "B"),
           f"{where}: SET LOCAL and UPDATE as two messages: the UPDATE is refused (got {errs})")
    errs, out = psql(bouncer, "stmt", "BEGIN", "SET LOCAL fencing.token = 37", upd("inv_req", id_, "B", 37), "COMMIT")
    report(row("inv_req", id_) == (36, "B"),
           f"{where}: a multi-statement transaction is not run by PgBouncer in statement mode (row unchanged)")
    with pooled(bouncer, "stmt") as b:
        n = fu_series(b, id_, base=36)
    report(n == [1, 0, 1], f"{where}: fenced_update() as an unnamed parameterized statement: 1, stale 0, 1 (got {n})")
    report_log(where, [id_])


def patterns_session(bouncer):
    where = f"{bouncer}/sess"
    reset_pool(bouncer, "sess")
    id_ = new_row("inv_req", 34)
    with pooled(bouncer, "sess", prepare_threshold=0) as b:
        n = fu_series(b, id_)
        prepared = b.execute("SELECT count(*) FROM pg_prepared_statements "
                             "WHERE statement LIKE '%fenced_update%' AND NOT from_sql").fetchone()[0]
        e = error_of(b, "SET fencing.allow_session_token = on")
    report(n == [1, 0, 1] and prepared >= 1,
           f"{where}: fenced_update() as a named protocol-level prepared statement: 1, stale 0, 1 "
           f"(got {n}, {prepared} prepared)")
    report(e is not None and e.sqlstate == "42501", f"{where}: a client cannot turn on fencing.allow_session_token: 42501 "
                          f"(got {e.sqlstate if e else 'accepted'})")
    report_log(where, [id_])


def prepare_write(conn, gid, *statements):
    """BEGIN; statements; PREPARE TRANSACTION gid: 'ok' or the SQLSTATE that
    stopped it (the transaction then rolled back)."""
    try:
        conn.execute("BEGIN")
        for sql in statements:
            conn.execute(sql)
        conn.execute(f"PREPARE TRANSACTION '{gid}'")
        return "ok"
    except psycopg.Error as e:
        conn.execute("ROLLBACK")
        return e.sqlstate


def prepared_transactions(bouncer):
    where = f"{bouncer}/tx"
    reset_pool(bouncer, "tx")
    id_ = new_row("inv_req", 34)
    other_id = new_row("inv_req", 34)
    with pooled(bouncer, "tx") as b, pooled(bouncer, "tx") as c, pooled(bouncer, "tx") as admin:
        prepared = prepare_write(b, "pooler_b", "SET LOCAL fencing.token = 36", upd("inv_req", id_, "B", 36))
        report(prepared == "ok", f"{where}: B's SET LOCAL write with 36, then PREPARE TRANSACTION (got {prepared})")
        shown = c.execute("SHOW fencing.token").fetchone()[0]
        got = outcome(c, upd("inv_req", other_id, "C", None))
        report(shown == "" and got == "TF002",
               f"{where}: after B's PREPARE TRANSACTION, C on the same server connection has no token "
               f"({shown!r}) and its write gets TF002 (got {got})")
        admin.execute("COMMIT PREPARED 'pooler_b'")
        report(row("inv_req", id_) == (36, "B"), f"{where}: COMMIT PREPARED from another client applies B's write at 36")
        got = prepare_write(c, "pooler_a", "SET LOCAL fencing.token = 35", upd("inv_req", id_, "A", 35, -1))
        report(got == "TF001", f"{where}: stale A's write in a transaction to be prepared: TF001 (got {got})")
        b.execute("SET fencing.token = 37")
        got = prepare_write(c, "pooler_c", upd("inv_req", id_, "C", None, 0))
        report(got == "TF002", f"{where}: after B's session SET, C's token-less write to be prepared: TF002 (got {got})")
        b.execute("RESET fencing.token")
    with direct() as d:
        left = [r[0] for r in d.execute("SELECT gid FROM pg_prepared_xacts WHERE gid LIKE 'pooler_%'")]
        for gid in left:
            d.execute(f"ROLLBACK PREPARED '{gid}'")
    report(left == [], f"{where}: no stale or token-less transaction was prepared (left: {left})")
    report_log(where, [id_, other_id])


def pipeline_outcome(conn, statements):
    """The statements in one psycopg pipeline: one implicit transaction, ended by
    the pipeline's one Sync. 'ok' or the SQLSTATE (psycopg 3.1 reports an error
    raised at the Sync itself, as a commit-time error, without one: 'no sqlstate')."""
    try:
        with conn.pipeline():
            for sql in statements:
                conn.execute(sql)
        return "ok"
    except psycopg.Error as e:
        return e.sqlstate or "no sqlstate"
    except IndexError:  # psycopg 3.1's pipeline, on an error at the Sync
        return "client error"
    finally:
        conn.close()


def pipelines(where, connect, loaded=True):
    """SET LOCAL fencing.token and a write in one implicit transaction (a psycopg
    pipeline, a multi-statement query string) is accepted, with or without the
    library loaded before it; only a SET LOCAL that ends its own transaction is
    refused (25P01)."""
    id_ = new_row("inv_req", 50)
    marker = f"{where} {'loaded' if loaded else 'not loaded'}"
    label = f"{where} (library {'loaded' if loaded else 'not loaded'} before)"
    got = [pipeline_outcome(connect(), ["SET LOCAL fencing.token = 51", upd("inv_req", id_, "B-pipe", 51)])]
    got.append(pipeline_outcome(connect(), ["SET LOCAL fencing.token = 50", upd("inv_req", id_, "A-pipe", 50, -1)]))
    with connect() as c:
        got.append(outcome(c, "SET LOCAL fencing.token = 52; " + upd("inv_req", id_, "B-multi", 52)))
    report(got == ["ok", "TF001", "ok"] and row("inv_req", id_) == (52, "B-multi"),
           f"{label}: SET LOCAL then UPDATE in one pipeline: accepted, stale TF001; in one query string: accepted "
           f"(got {got}, row {row('inv_req', id_)})")
    with connect() as c:
        lone = [outcome(c, "SET LOCAL fencing.token = 53"), outcome(c, upd("inv_req", id_, "A-lost", 53, -1))]
    # A pipeline that ends with the SET LOCAL: refused at its commit, so the
    # marker written before it in the same implicit transaction is rolled back.
    last = pipeline_outcome(connect(), [f"INSERT INTO pipe_marks VALUES ('{marker}')", "SET LOCAL fencing.token = 53"])
    with direct() as d:
        kept = d.execute("SELECT count(*) FROM pipe_marks WHERE mark = %s", (marker,)).fetchone()[0]
    # Before the library is loaded PostgreSQL only warns: the lost token still
    # lets no write through (the next one gets TF002).
    expect = (["25P01", "TF002"], True) if loaded else (["ok", "TF002"], False)
    report(lone == expect[0] and (last != "ok" and kept == 0) == expect[1],
           f"{label}: a SET LOCAL alone in its transaction: {expect[0][0]}, the next write TF002; a pipeline ending "
           f"with it is {'refused and rolled back' if loaded else 'only warned about'} "
           f"(got {lone}, {last}, marker rows {kept})")
    report_log(label, [id_])


def pipelines_all():
    with direct() as d:
        d.execute("CREATE TABLE IF NOT EXISTS pipe_marks (mark text); GRANT INSERT ON pipe_marks TO app")
    pipelines("direct", direct, loaded=False)

    def direct_loaded():
        c = direct()
        c.execute("LOAD 'fencing'")
        return c
    pipelines("direct", direct_loaded)
    for bouncer in BOUNCERS:
        for mode in ("tx", "stmt", "sess"):
            reset_pool(bouncer, mode)
            pipelines(f"{bouncer}/{mode}", lambda: pooled(bouncer, mode))


# --------------------------------------------------------------------------
# The same shapes from other drivers: the programs under test/pooler/batches/
# (built by run.sh; see their README). POOLER_BATCH_GO is the pgx program,
# POOLER_BATCH_JAVA the class path of the pgjdbc one, POOLER_BATCH_NODE the
# node_modules directory of node-postgres; one left empty (its toolchain or
# build failed) fails that driver's checks. Each driver's shapes, and the
# protocol a shape sends its statements with: "extended", every statement its
# own Parse/Bind/Execute and one Sync after the last, as a pipeline; "simple",
# one Query message (a multi-statement string, an implicit transaction block).
BATCH_DRIVERS = {
    "pgx": ("POOLER_BATCH_GO", {"batch": "extended", "batch-cache": "extended", "multi": "simple"}),
    "pgjdbc": ("POOLER_BATCH_JAVA", {"batch": "extended", "multi": "extended"}),
    "node-postgres": ("POOLER_BATCH_NODE", {"multi": "simple"}),
}
# Named protocol-level prepared statements: not in transaction or statement
# pooling (PgBouncer 1.18, see "Prepared statements" in docs/poolers.md).
NAMED_SHAPES = {"batch-cache"}


def batch_command(driver, target):
    """The program's command line for a target: None (direct, the superuser) or
    (bouncer, mode)."""
    host, port, user, db = (("127.0.0.1", os.environ["PGPORT"], "postgres", "atk") if target is None
                            else ("127.0.0.1", BOUNCERS[target[0]], "app", target[1]))
    built = os.environ.get(BATCH_DRIVERS[driver][0], "")
    if not built:
        return None
    if driver == "pgx":
        return [built, f"host={host} port={port} user={user} dbname={db} sslmode=disable"]
    if driver == "pgjdbc":
        return ["java", "-cp", built, "Batch",
                f"jdbc:postgresql://{host}:{port}/{db}?user={user}&sslmode=disable&prepareThreshold=0"]
    return ["node", os.path.join(os.path.dirname(os.path.abspath(__file__)), "batches", "batch.js"),
            f"postgresql://{user}@{host}:{port}/{db}?sslmode=disable"]


def batch_outcomes(driver, target, load, cases):
    """Runs the cases ([shape, statement, ...], each on a new connection, after
    LOAD 'fencing' if load): their outcomes, or None and the program's error output."""
    cmd = batch_command(driver, target)
    if cmd is None:
        return None, f"{BATCH_DRIVERS[driver][0]} is empty: the program was not built (see run.sh's output)"
    env = dict(os.environ, NODE_PATH=os.environ.get("POOLER_BATCH_NODE", ""))
    try:
        p = subprocess.run(cmd + ["1" if load else "0"] + ["\n".join(c) for c in cases], capture_output=True,
                           text=True, timeout=120, env=env)
    except (OSError, subprocess.TimeoutExpired) as e:
        return None, str(e)
    got = p.stdout.splitlines()
    if p.returncode != 0 or len(got) != len(cases):
        return None, f"exit {p.returncode}: {(p.stdout + p.stderr).strip()[-300:]!r}"
    return got, ""


def batches(driver, where, target, loaded):
    """pipelines() for one driver: SET LOCAL and a write in one of its batches or
    multi-statement strings (one implicit transaction) is accepted, with or without
    the library loaded before it; a stale token in it is refused TF001; a batch
    (or a multi-statement string) that ends with the SET LOCAL is refused at its
    Sync (its commit) and rolled back once the library is loaded (before that
    PostgreSQL only warns), as a psycopg pipeline; a SET LOCAL alone in its transaction: 25P01
    loaded, a warning not loaded, the next write TF002. Behind a PgBouncer the
    library is loaded on the pool's server connection by the earlier cases; direct,
    the program sends LOAD 'fencing' first when loaded."""
    label = f"{where} {driver} (library {'loaded' if loaded else 'not loaded'} before)"
    shapes = {shape: proto for shape, proto in BATCH_DRIVERS[driver][1].items()
              if target is None or target[1] == "sess" or shape not in NAMED_SHAPES}
    ids = {shape: new_row("inv_req", 50) for shape in shapes}
    lone_id = new_row("inv_req", 50)
    markers = {shape: f"{label} {shape}" for shape in shapes}
    cases = []
    for shape in shapes:
        id_ = ids[shape]
        cases.append([shape, "SET LOCAL fencing.token = 51", upd("inv_req", id_, f"B-{shape}", 51)])
        cases.append([shape, "SET LOCAL fencing.token = 50", upd("inv_req", id_, f"A-{shape}", 50, -1)])
        if shape in markers:
            cases.append([shape, f"INSERT INTO pipe_marks VALUES ('{markers[shape]}')",
                          "SET LOCAL fencing.token = 53"])
    cases.append(["each", "SET LOCAL fencing.token = 53", upd("inv_req", lone_id, "A-lost", 53, -1)])
    got, err = batch_outcomes(driver, target, loaded and target is None, cases)
    if got is None:
        report(False, f"{label}: the program ran ({err})")
        return
    with direct() as d:
        kept = {shape: d.execute("SELECT count(*) FROM pipe_marks WHERE mark = %s", (m,)).fetchone()[0]
                for shape, m in markers.items()}
    outcomes = iter(got)
    for shape in shapes:
        fresh, stale = next(outcomes), next(outcomes)
        r = row("inv_req", ids[shape])
        report([fresh, stale] == ["ok", "TF001"] and r == (51, f"B-{shape}"),
               f"{label}: SET LOCAL then UPDATE in one {shape}: accepted, stale TF001 (got {fresh}, {stale}, row {r})")
        if shape not in markers:
            continue
        last = next(outcomes)
        report((last != "ok" and kept[shape] == 0) == loaded,
               f"{label}: a {shape} ending with the SET LOCAL is "
               f"{'refused and rolled back' if loaded else 'only warned about'} (got {last}, marker rows {kept[shape]})")
    lone = got[-1].split()
    expect = ["25P01", "TF002"] if loaded else ["ok", "TF002"]
    report(lone == expect, f"{label}: a SET LOCAL alone in its transaction: {expect[0]}, the next write TF002 "
                           f"(got {lone})")
    report_log(label, list(ids.values()) + [lone_id])


def batches_all():
    """batches() for every driver, direct (the library not loaded yet, then
    loaded) and behind both PgBouncers in every pool mode."""
    for driver in BATCH_DRIVERS:
        batches(driver, "direct", None, loaded=False)
        batches(driver, "direct", None, loaded=True)
        for bouncer in BOUNCERS:
            for mode in ("tx", "stmt", "sess"):
                reset_pool(bouncer, mode)
                batches(driver, f"{bouncer}/{mode}", (bouncer, mode), loaded=True)


def asyncpg_clients(bouncer):
    """asyncpg (autocommit, binary protocol) in transaction pooling. With
    statement_cache_size=0 it sends unnamed statements, which PgBouncer 1.18 can
    pool; its default, a cache of named ones, cannot be pooled per transaction."""
    import asyncio

    import asyncpg

    where = f"{bouncer}/tx asyncpg"
    reset_pool(bouncer, "tx")
    id_ = new_row("inv_req", 34)
    dsn = f"postgresql://app@127.0.0.1:{BOUNCERS[bouncer]}/tx"
    fu = "SELECT fenced_update('inv_req', $1::bigint, $2::jsonb, $3::jsonb)"

    async def sqlstate_of(coro):
        try:
            await coro
            return "ok"
        except asyncpg.PostgresError as e:
            return e.sqlstate

    async def write_in_transaction(conn, token, writer):
        async with conn.transaction():
            await conn.execute("SELECT set_config('fencing.token', $1, true)", str(token))
            await conn.execute("UPDATE inv_req SET stock = 1, writer = $1, intended = $2 WHERE id = $3",
                               writer, token, id_)

    async def run():
        b = await asyncpg.connect(dsn, statement_cache_size=0)
        a = await asyncpg.connect(dsn, statement_cache_size=0)
        try:
            n = [await b.fetchval(fu, t, f'{{"id": {id_}}}', f'{{"writer": "{w}", "intended": {t}}}')
                 for t, w in ((35, "B"), (34, "A"), (36, "B"))]
            fresh = await sqlstate_of(write_in_transaction(b, 37, "B"))
            stale = await sqlstate_of(write_in_transaction(a, 36, "A"))
            await b.execute("SET fencing.token = 38")
            await sqlstate_of(a.execute("SET LOCAL fencing.token = 36"))
            lost = await sqlstate_of(a.execute(upd("inv_req", id_, "A", 36, -1)))
            return n, fresh, stale, lost
        finally:
            await a.close()
            await b.close()

    n, fresh, stale, lost = asyncio.run(run())
    report(n == [1, 0, 1], f"{where}: fenced_update(), unnamed statements: 1, stale 0, 1 (got {n})")
    report(fresh == "ok" and stale == "TF001",
           f"{where}: set_config(..., true) in a transaction: accepted, stale TF001 (got {fresh}, {stale})")
    report(lost in REFUSED, f"{where}: stale SET LOCAL in autocommit after B's session SET: refused (got {lost})")
    report_log(where, [id_], "the log holds only B's writes, the row is B's at 37",
               extra=row("inv_req", id_) == (37, "B"))


# --------------------------------------------------------------------------
def stress(bouncer, mode, seconds):
    """Holders B (each with a token from a shared counter, written correctly, and
    now and then also set for the session), stale holders A (token-losing patterns)
    and token-less C, all at once, sharing one server connection."""
    where = f"{bouncer}/{mode}"
    reset_pool(bouncer, mode)
    ids = [new_row("inv_req", 1000) for _ in range(2)]
    lock = threading.Lock()
    counter = [1000]
    stats = {"B ok": 0, "B stale": 0, "A refused": 0, "C refused": 0, "other": []}
    stop = time.monotonic() + seconds

    def holder(k):
        rnd = random.Random(k)
        conn = pooled(bouncer, mode)
        while time.monotonic() < stop:
            with lock:
                counter[0] += 1
                t = counter[0]
            id_ = rnd.choice(ids)
            how = rnd.randrange(3)
            if how == 0:
                got = write_right(conn, mode, "inv_req", id_, f"B{k}", t)
            elif how == 1:
                n = conn.execute(fenced_update_sql("inv_req"), fu_args(t, id_, f"B{k}")).fetchone()[0]
                got = "ok" if n == 1 else "TF001"
            else:
                got = outcome(conn, f"SELECT set_config('fencing.token', '{t}', true); "
                                    + upd("inv_req", id_, f"B{k}", t))
            with lock:
                if got == "ok":
                    stats["B ok"] += 1
                elif got == "TF001":
                    stats["B stale"] += 1
                else:
                    stats["other"].append(("B", got))
            r = rnd.random()
            if r < 0.3:
                conn.execute(f"SET fencing.token = {t}")  # the habit that leaked
            if r < 0.1:
                conn.close()
                conn = pooled(bouncer, mode)
        conn.close()

    def stale(k):
        rnd = random.Random(100 + k)
        conn = pooled(bouncer, mode)
        while time.monotonic() < stop:
            t = 1000 - k  # below every row's HWM
            id_ = rnd.choice(ids)
            if rnd.random() < 0.5:
                outcome(conn, f"SET LOCAL fencing.token = {t}")
                got = outcome(conn, upd("inv_req", id_, "A", t, -1))
            else:
                conn.execute(f"SET fencing.token = {t}")
                got = outcome(conn, upd("inv_req", id_, "A", t, -1))
                conn.execute("RESET fencing.token")
            with lock:
                if got in REFUSED:
                    stats["A refused"] += 1
                else:
                    stats["other"].append(("A", got))

    def tokenless():
        rnd = random.Random(7)
        conn = pooled(bouncer, mode)
        while time.monotonic() < stop:
            got = outcome(conn, upd("inv_req", rnd.choice(ids), "C", None, 0))
            with lock:
                if got == "TF002":
                    stats["C refused"] += 1
                else:
                    stats["other"].append(("C", got))

    threads = [threading.Thread(target=holder, args=(k,)) for k in range(3)]
    threads += [threading.Thread(target=stale, args=(k,)) for k in range(2)]
    threads.append(threading.Thread(target=tokenless))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad = audit_violations("inv_req", ids)
    n = accepted_writes("inv_req", ids)
    others = stats["other"]
    report(not bad and n == stats["B ok"] and n > 0,
           f"{where}: {seconds:.0f}s of 3 holders, 2 stale holders, 1 token-less client on one server connection: "
           f"{n} writes accepted, every one B's own token at or above the HWM "
           f"(B ok {stats['B ok']}, B stale {stats['B stale']}, A refused {stats['A refused']}, "
           f"C refused {stats['C refused']})" + (f"; violations {bad[:5]}" if bad else ""))
    report(not others and stats["A refused"] > 0 and stats["C refused"] > 0,
           f"{where}: every stale and token-less write refused with TF001/TF002"
           + (f"; unexpected {others[:5]} of {len(others)}" if others else ""))


def main():
    setup()
    for bouncer in BOUNCERS:
        for mode in ("tx", "stmt"):
            shared_connection(bouncer, mode)
            leak(bouncer, mode)
            default_policy(bouncer, mode)
            discard_all(bouncer, mode)
        for mode in ("tx", "stmt", "sess"):
            column_token_after_stray(bouncer, mode)
        leak_session_mode(bouncer)
        role_setting(bouncer)
        patterns_transaction(bouncer)
        patterns_statement(bouncer)
        patterns_session(bouncer)
        prepared_transactions(bouncer)
        asyncpg_clients(bouncer)
    pipelines_all()
    batches_all()
    for mode in ("tx", "stmt"):
        stress("bare", mode, STRESS_SECONDS)
    stress("recommended", "tx", STRESS_SECONDS)
    return finish()


if __name__ == "__main__":
    sys.exit(main())
