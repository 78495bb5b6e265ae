#!/usr/bin/python3
"""The migrations suite: migration tools as users run them, under fenced
writers with the commit order recorded (test/migrations/fenced.py says what
the writers do and what the checker asserts after each migration).

    suite.py SECTION...   django alembic activerecord inplace swap

Each section runs in a database of its own (mig_<section>) of the cluster of
the libpq environment. A migration either applies under the writers, or is
refused with the SQLSTATE this file lists for it (REFUSED), in which case the
suite says so, runs its documented way through and checks that too. Prints
"ok N - ..." lines; exits non-zero on a failure.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import psycopg

import fenced
from fenced import report

HERE = os.path.dirname(os.path.abspath(__file__))
SETTLE = float(os.environ.get("MIG_SETTLE", "0.5"))  # seconds of writes after each migration


def run_cmd(argv, cwd=None, env=None):
    r = subprocess.run(argv, cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True,
                       text=True, timeout=180)
    return r.returncode, (r.stdout + r.stderr)


# The errors a tool prints without their SQLSTATE (psycopg2, ActiveRecord), by message.
MESSAGES = {"TF001": "stale fencing token", "TF002": "requires a fencing token",
            "55000": "cannot change the primary key", "22012": "division by zero"}


def sqlstate_in(output):
    """The SQLSTATE an error output names, or whose message it prints."""
    m = re.search(r"ERROR: (TF00\d|[0-9A-Z]{2}[0-9]{3}) ", output or "")
    if m:
        return m.group(1)
    for state, message in MESSAGES.items():
        if message in (output or ""):
            return state
    return None


class Section:
    def __init__(self, name):
        self.name = name
        self.db = f"mig_{name}"
        admin = fenced.connect(dbname="postgres")
        admin.execute(f"DROP DATABASE IF EXISTS {self.db}")
        admin.execute(f"CREATE DATABASE {self.db}")
        admin.close()
        os.environ["PGDATABASE"] = self.db
        self.conn = fenced.connect()
        fenced.prepare(self.conn)
        self.work = tempfile.mkdtemp(prefix=f"fencing-mig-{name}.")
        self.writers = None
        self.checker = None
        self.refused = []

    def created_by_tool(self, label, run, prefix):
        """The tool's first migration creates the three tables; seeds them and
        starts the writers. False when it failed."""
        rc, out = run()
        report(rc == 0, f"{self.name}: {label} applies" + ("" if rc == 0 else f": {tail(out)}"))
        if rc == 0:
            fenced.create_tables(self.conn, prefix, create=False)
            self.start_writers()
        return rc == 0

    def start_writers(self):
        self.writers = fenced.Writers(self.work)
        self.writers.start()
        self.checker = fenced.Checker(self.conn, self.writers)
        time.sleep(SETTLE)

    def step(self, label, run, tables=("row", "table", "resource"), way_through=None,
             fails_with=None):
        """Runs migration LABEL (run() returns (rc, output)) under the writers,
        then the checker. WAY_THROUGH: (sqlstate, doc, run) when the migration
        is refused by design: the refusal must carry that SQLSTATE, and the
        documented way through must apply."""
        label = f"{self.name}: {label}"
        self.checker.begin()
        rc, out = run()
        time.sleep(SETTLE)
        if fails_with:
            got = sqlstate_in(out) if rc else "no error"
            report(got == fails_with, f"{label}: fails with {fails_with} and rolls back (got {got})")
        elif rc == 0:
            report(True, f"{label}: applies under fenced writers")
        elif way_through:
            state, doc, alternative = way_through
            got = sqlstate_in(out)
            report(got == state, f"{label}: refused with {state} (got {got}); way through: {doc}")
            self.refused.append((label, state, doc))
            rc2, out2 = alternative()
            time.sleep(SETTLE)
            report(rc2 == 0, f"{label}: the way through applies under fenced writers"
                   + ("" if rc2 == 0 else f": {tail(out2)}"))
        else:
            report(False, f"{label}: applies under fenced writers: rc {rc}: {tail(out)}")
        self.checker.check(label, tables)

    def sql_step(self, label, statements, keep_going=False, **kw):
        """A migration as SQL statements, each in its own transaction (autocommit)
        unless it is a list (one transaction). The first error ends it, unless
        KEEP_GOING (the error is still what it returns)."""
        def run():
            c = fenced.connect()
            first = None
            try:
                for s in statements:
                    try:
                        if isinstance(s, list):
                            with c.transaction():
                                for x in s:
                                    c.execute(x)
                        else:
                            c.execute(s)
                    except psycopg.Error as e:
                        first = first or f"ERROR: {e.sqlstate} {e}"
                        if not keep_going:
                            break
                return (1, first) if first else (0, "")
            finally:
                c.close()
        self.step(label, run, **kw)

    def finish(self):
        if self.writers:
            self.writers.stop()
        for label, state, doc in self.refused:
            print(f"# refused by design: {label}: {state}; way through: {doc}")
        self.conn.close()


def tail(out):
    lines = [x for x in (out or "").strip().splitlines() if x.strip()]
    keep = [x for x in lines if "ERROR" in x or "Error" in x or "DETAIL" in x or "HINT" in x]
    return " | ".join((keep or lines)[-4:])[:600]


# ------------------------------------------------------------------ Django
def django():
    s = Section("django")
    d = os.path.join(HERE, "django")

    def migrate(target, **env):
        return lambda: run_cmd(["/usr/bin/python3", "manage.py", "migrate", "shop", target,
                                "-v", "0"], cwd=d, env=env)
    if not s.created_by_tool("0001 CreateModel x3 (row, table, resource scope)", migrate("0001"),
                             "dj"):
        return s
    s.step("0002 AddField (nullable; with a default)", migrate("0002"))
    s.step("0003 RunPython backfill in batches, token-less", migrate("0003"),
           way_through=("TF002", "fencing_allow_unfenced(table, reason) in the migration",
                        migrate("0003", MIG_BACKFILL_ALLOW_UNFENCED="1")))
    s.step("0004 AlterField CharField -> TextField", migrate("0004"))
    s.step("0005 RenameField note -> memo", migrate("0005"))
    s.step("0006 RemoveField", migrate("0006"))
    s.step("0007 BigAutoField (int -> bigint primary keys, tombstones in row scope)",
           migrate("0007"))
    rc, out = run_cmd(["/usr/bin/python3", "manage.py", "migrate", "--check", "-v", "0"], cwd=d)
    report(rc == 0, "django: every migration applied (migrate --check)"
           + ("" if rc == 0 else f": {tail(out)}"))
    return s


# ------------------------------------------------------------------ Alembic
def alembic():
    s = Section("alembic")
    d = os.path.join(s.work, "alembic")
    shutil.copytree(os.path.join(HERE, "alembic"), d, ignore=shutil.ignore_patterns("later"))

    def al(*args):
        return lambda: run_cmd(["/usr/bin/python3", "-m", "alembic", *args], cwd=d)
    if not s.created_by_tool("upgrade 0001 (three fenced tables)", al("upgrade", "0001"), "al"):
        return s
    rc, out = al("revision", "--autogenerate", "--rev-id", "0002", "-m", "add note")()
    gen = os.path.join(d, "versions", "0002_add_note.py")
    body = open(gen).read() if os.path.exists(gen) else ""
    added = sorted(re.findall(r"op\.add_column\('(al_\w+)', sa\.Column\('note'", body))
    others = re.findall(r"op\.(?!add_column|drop_column)\w+\(", body)
    report(rc == 0 and added == ["al_res", "al_row", "al_tab"] and not others,
           f"alembic: autogenerate writes add_column of note on the three tables and nothing "
           f"else (got {added}, other operations {others})" + ("" if rc == 0 else tail(out)))
    s.step("upgrade head (autogenerated add_column)", al("upgrade", "head"))
    s.step("downgrade -1 (drop_column)", al("downgrade", "-1"))
    s.step("upgrade head again", al("upgrade", "head"))
    for f in os.listdir(os.path.join(HERE, "alembic", "later")):
        shutil.copy(os.path.join(HERE, "alembic", "later", f), os.path.join(d, "versions"))
    s.step("batch_alter_table(recreate='always') of the table- and resource-scope tables",
           al("upgrade", "0003"), tables=("table", "resource"))
    s.step("batch_alter_table(recreate='always') of the row-scope table (tombstones)",
           al("upgrade", "0004"), tables=("row",))
    batch_race(s.conn)
    batch_race_same_token(s.conn)
    url = (f"postgresql+psycopg2://{os.environ.get('PGUSER', 'postgres')}@/{s.db}"
           f"?host={os.environ['PGHOST']}&port={os.environ['PGPORT']}")
    rc, out = run_cmd(["/usr/bin/python3", os.path.join(HERE, "alembic_same_token.py"), url])
    report(rc == 0 and out.count("acked write kept") == 2,
           "alembic: batch_alter_table(recreate='always') of table- and resource-scope tables "
           "without a key, a same-token write committed between its copy and its DROP: "
           "refused, the acknowledged write kept" + ("" if rc == 0 else tail(out)))
    return s


def drop_and_rename(migration, t):
    """Alembic's last batch steps on the migration's connection, committed;
    closes it. "committed" or "refused <SQLSTATE>"."""
    try:
        migration.execute(f"DROP TABLE {t}")
        migration.execute(f"ALTER TABLE _alembic_tmp_{t} RENAME TO {t}")
        migration.commit()
        outcome = "committed"
    except psycopg.Error as e:
        migration.rollback()
        outcome = f"refused {e.sqlstate}"
    migration.close()
    return outcome


def batch_race(conn):
    """Alembic's batch recreate takes no lock before its copy: a fenced write
    that commits between the copy (INSERT ... SELECT) and the DROP is not in
    the new table. The rename is refused (40001): the old table stays, with
    the acknowledged write, and a token below it is refused. Alembic's
    statements, with a pause between copy and DROP to make the interleaving
    certain."""
    label = "alembic: batch recreate (row scope) racing a fenced write"
    conn.execute("CREATE TABLE race (id int PRIMARY KEY, v int, fence fencing_token)")
    with conn.transaction():
        conn.execute("SET LOCAL fencing.token = 10")
        conn.execute("INSERT INTO race (id, v) VALUES (1, 0), (2, 0)")
    migration = psycopg.connect()
    migration.execute("CREATE TABLE _alembic_tmp_race (id int NOT NULL, v int, "
                      "fence fencing_token, PRIMARY KEY (id))")
    migration.execute("INSERT INTO _alembic_tmp_race (id, v, fence) SELECT id, v, fence FROM race")
    # The writer commits its token-50 write after the copy, before the DROP.
    with conn.transaction():
        conn.execute("SET LOCAL fencing.token = 50")
        conn.execute("UPDATE race SET v = 50 WHERE id = 1")
    outcome = drop_and_rename(migration, "race")
    hwm = fenced.value(conn, "SELECT fencing_high_water('race', '{\"id\": 1}')::text::bigint")
    got = refusal(conn, 30, "UPDATE race SET v = -1 WHERE id = 1")
    report(got == "TF001" and outcome == "refused 40001" and hwm == 50,
           f"{label}: the migration {outcome} (want refused 40001); afterwards key 1's HWM is {hwm} "
           f"and a write with 30 (below the acknowledged 50) is refused (got {got})")


def batch_race_same_token(conn):
    """The same race where tokens cannot tell the missed write: a write at
    the table's (or resource's) HWM, and a DELETE, committed between the copy
    and the DROP of a table- or resource-scope table. The DROP compares the
    table as the copy saw it with the table as it is: refused 40001, the
    acknowledged write kept."""
    policies = {"table": "scope => 'table'",
                "resource": "scope => 'resource', resource_column => 'shard', "
                            "resource_namespace => 'mig-race'"}
    writes = {"update at the HWM": ("UPDATE {t} SET v = 50 WHERE id = 1",
                                    "SELECT count(*) = 1 FROM {t} WHERE v = 50"),
              "delete": ("DELETE FROM {t} WHERE id = 1",
                         "SELECT NOT EXISTS (SELECT 1 FROM {t} WHERE id = 1)")}
    for scope, policy in policies.items():
        for what, (write, kept_sql) in writes.items():
            t = f"race_{scope}_{what.split()[0]}"
            conn.execute(f"CREATE TABLE {t} (id int, shard text, v int, fence fencing_token)")
            conn.execute(f"SELECT fencing_protect('{t}', 'fence', {policy})")
            with conn.transaction():
                conn.execute("SET LOCAL fencing.token = 10")
                conn.execute(f"INSERT INTO {t} (id, shard, v) VALUES (1, 'a', 0), (2, 'a', 0)")
            migration = psycopg.connect()
            migration.execute(f"CREATE TABLE _alembic_tmp_{t} (id int, shard text, v int, "
                              "fence fencing_token)")
            migration.execute(f"SELECT fencing_protect('_alembic_tmp_{t}', 'fence', {policy})")
            migration.execute(f"INSERT INTO _alembic_tmp_{t} SELECT * FROM {t}")
            with conn.transaction():
                conn.execute("SET LOCAL fencing.token = 10")
                conn.execute(write.format(t=t))
            outcome = drop_and_rename(migration, t)
            kept = fenced.value(conn, kept_sql.format(t=t))
            report(outcome == "refused 40001" and kept is True,
                   f"alembic: batch recreate ({scope} scope) racing a same-token {what}: the "
                   f"migration {outcome} (want refused 40001); the acknowledged write kept: {kept}")


# ------------------------------------------------------------------ ActiveRecord
def activerecord():
    s = Section("activerecord")
    fenced.create_tables(s.conn, "ar", row_token_type="bigint")
    s.start_writers()

    def migrate(version):
        return lambda: run_cmd(["ruby", os.path.join(HERE, "activerecord", "migrate.rb"),
                                version])
    s.step("add_column (plain; with a default)", migrate("20240101000001"))
    s.step("change_column :id, :bigint (int -> bigint primary keys, tombstones in row scope)",
           migrate("20240101000002"))
    s.step("rename_column note -> memo", migrate("20240101000003"))
    s.step("change_column :memo, :text", migrate("20240101000004"))
    s.step("change_column :fence, 'fencing_token' (row scope, fenced on a bigint column)",
           migrate("20240101000005"))
    report(s.conn.execute("SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
                          "WHERE attrelid = 'ar_row'::regclass AND attname = 'fence'"
                          ).fetchone()[0] == "fencing_token",
           "activerecord: ar_row's token column is fencing_token now")
    return s


# ------------------------------------------------------------------ expand/contract in place
def inplace():
    s = Section("inplace")
    names = fenced.create_tables(s.conn, "ip")
    s.conn.execute("CREATE TABLE ip_ref (id bigint PRIMARY KEY)")
    s.conn.execute("INSERT INTO ip_ref SELECT generate_series(1, 10)")
    s.start_writers()
    ts = list(names.values())

    def each(fmt):
        return [fmt.format(t=t) for t in ts]
    s.sql_step("ADD COLUMN without a default", each("ALTER TABLE {t} ADD COLUMN c1 int"))
    s.sql_step("ADD COLUMN with a default", each("ALTER TABLE {t} ADD COLUMN c2 int DEFAULT 7"))
    s.sql_step("ADD COLUMN with a volatile default (rewrites the table)",
               each("ALTER TABLE {t} ADD COLUMN c3 timestamptz DEFAULT clock_timestamp()"))
    s.sql_step("CREATE INDEX CONCURRENTLY", each("CREATE INDEX CONCURRENTLY {t}_v ON {t} (v)"))
    s.sql_step("ALTER COLUMN TYPE of a data column (int -> bigint)",
               each("ALTER TABLE {t} ALTER COLUMN c1 TYPE bigint"))
    # The batched backfill: 2 rows per transaction, token-less, inside
    # fencing_allow_unfenced() (it writes only the new column).
    batches = [[f"SELECT fencing_allow_unfenced('{t}', 'backfill c1')",
                f"UPDATE {t} SET c1 = id WHERE id BETWEEN {lo} AND {lo + 1} AND c1 IS NULL"]
               for t in ts for lo in range(1, 9, 2)]
    s.sql_step("batched backfill (2 rows a transaction, fencing_allow_unfenced)", batches)
    s.sql_step("CHECK NOT VALID, then VALIDATE",
               each("ALTER TABLE {t} ADD CONSTRAINT {t}_c2 CHECK (c2 > 0) NOT VALID")
               + each("ALTER TABLE {t} VALIDATE CONSTRAINT {t}_c2"))
    s.sql_step("FOREIGN KEY NOT VALID, then VALIDATE",
               each("ALTER TABLE {t} ADD CONSTRAINT {t}_c1 FOREIGN KEY (c1) REFERENCES ip_ref "
                    "NOT VALID") + each("ALTER TABLE {t} VALIDATE CONSTRAINT {t}_c1"))
    s.sql_step("SET NOT NULL", each("ALTER TABLE {t} ALTER COLUMN c2 SET NOT NULL"))
    s.sql_step("RENAME COLUMN", each("ALTER TABLE {t} RENAME COLUMN c2 TO c2_renamed"))
    s.sql_step("RENAME TABLE", [[f"ALTER TABLE {t} RENAME TO {t}_renamed",
                                 f"UPDATE mig.alias SET physical = '{t}_renamed' "
                                 f"WHERE physical = '{t}'"] for t in ts])
    return s


# ------------------------------------------------------------------ shadow-table swap
def swap_statements(t, cols, scope):
    """The pg-osc-style swap of table T (columns COLS) as docs/migrations.md
    gives it: shadow (LIKE ... INCLUDING ALL, left in row scope during the
    copy), a sync trigger, a batched copy, the swap with
    fencing_transfer_state(), DROP of the old table."""
    c = ", ".join(cols)
    new = ", ".join(f"NEW.{x}" for x in cols)
    upd = ", ".join(f"{x} = EXCLUDED.{x}" for x in cols if x != "id")
    steps = [
        f"CREATE TABLE {t}_new (LIKE {t} INCLUDING ALL)",
        f"ALTER TABLE {t}_new ADD COLUMN note text",
        f"""CREATE FUNCTION {t}_sync() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                DELETE FROM {t}_new WHERE id = OLD.id;
            ELSE
                IF TG_OP = 'UPDATE' AND NEW.id <> OLD.id THEN
                    DELETE FROM {t}_new WHERE id = OLD.id;
                END IF;
                INSERT INTO {t}_new ({c}) VALUES ({new})
                    ON CONFLICT (id) DO UPDATE SET {upd};
            END IF;
            RETURN NULL;
        END $$""",
        f"CREATE TRIGGER {t}_sync AFTER INSERT OR UPDATE OR DELETE ON {t} "
        f"FOR EACH ROW EXECUTE FUNCTION {t}_sync()",
    ]
    # The copy in key order, batches of 3 keys; each batch holds SHARE on the
    # old table so that no write commits between its snapshot and its insert
    # (a row deleted in between would otherwise come back).
    for lo in range(1, 9, 3):
        steps.append([f"LOCK TABLE {t} IN SHARE MODE",
                      f"INSERT INTO {t}_new ({c}) SELECT {c} FROM {t} "
                      f"WHERE id BETWEEN {lo} AND {lo + 2} ORDER BY id ON CONFLICT (id) DO NOTHING"])
    steps.append([f"LOCK TABLE {t}, {t}_new IN ACCESS EXCLUSIVE MODE",
                  f"DROP TRIGGER {t}_sync ON {t}",
                  f"SELECT fencing_transfer_state('{t}', '{t}_new')",
                  f"ALTER TABLE {t} RENAME TO {t}_old",
                  f"ALTER TABLE {t}_new RENAME TO {t}"])
    steps.append(f"DROP TABLE {t}_old")
    steps.append(f"DROP FUNCTION {t}_sync()")
    return steps


def swap():
    s = Section("swap")
    names = fenced.create_tables(s.conn, "sw")
    s.start_writers()
    for logical, cols in (("row", ["id", "v", "fence"]), ("table", ["id", "v", "fence"]),
                          ("resource", ["id", "shard", "v", "fence"])):
        t = names[logical]
        steps = swap_statements(t, cols, logical)
        # A swap that fails after the state was handed over: everything rolls back,
        # the old table keeps its state and policy; then the shadow is dropped.
        halfway = steps[:-3] + [steps[-3] + ["SELECT 1 / 0"], f"DROP TABLE {t}_new",
                                              f"DROP FUNCTION {t}_sync() CASCADE"]
        s.sql_step(f"shadow-table swap in {logical} scope, rolled back after the hand-over",
                   halfway, tables=(logical,), fails_with="22012", keep_going=True)
        s.sql_step(f"shadow-table swap (pg-osc style) in {logical} scope", steps,
                   tables=(logical,))
    partitioned_swap(s.conn)
    return s


def refusal(conn, token, sql):
    """The SQLSTATE of SQL written with TOKEN (None: none), rolled back; "accepted" when not."""
    try:
        with conn.transaction():
            if token is not None:
                conn.execute("SELECT set_config('fencing.token', %s, true)", (str(token),))
            conn.execute(sql)
            raise fenced.Accepted()
    except fenced.Accepted:
        return "accepted"
    except psycopg.Error as e:
        return e.sqlstate


def partitioned_swap(conn):
    """The swap of a partitioned row-scope table (transfer on the parents): the
    new table keeps the tombstone; the old table, parent and partitions alike,
    refuses every write until it is dropped (a write there would be
    acknowledged and then lost with it)."""
    label = "swap: partitioned row-scope table"
    for sql in (
            "CREATE TABLE pev (id int, region text, v int, fence fencing_token, "
            "PRIMARY KEY (id, region)) PARTITION BY LIST (region)",
            "CREATE TABLE pev_eu PARTITION OF pev FOR VALUES IN ('eu')",
            "CREATE TABLE pev_us PARTITION OF pev FOR VALUES IN ('us')",
            "BEGIN", "SET LOCAL fencing.token = 10",
            "INSERT INTO pev VALUES (1, 'eu', 0), (2, 'us', 0), (3, 'us', 0)", "COMMIT",
            "BEGIN", "SET LOCAL fencing.token = 20", "DELETE FROM pev WHERE id = 2", "COMMIT",
            "CREATE TABLE pev_new (LIKE pev INCLUDING ALL) PARTITION BY LIST (region)",
            "CREATE TABLE pev_new_eu PARTITION OF pev_new FOR VALUES IN ('eu')",
            "CREATE TABLE pev_new_us PARTITION OF pev_new FOR VALUES IN ('us')",
            "INSERT INTO pev_new SELECT * FROM pev"):
        conn.execute(sql)
    try:
        with conn.transaction():
            conn.execute("LOCK TABLE pev, pev_new IN ACCESS EXCLUSIVE MODE")
            conn.execute("SELECT fencing_transfer_state('pev', 'pev_new')")
            conn.execute("ALTER TABLE pev RENAME TO pev_old")
            conn.execute("ALTER TABLE pev_new RENAME TO pev")
        swapped = "swapped"
    except psycopg.Error as e:
        swapped = f"{e.sqlstate} {str(e).splitlines()[0]}"
    report(swapped == "swapped", f"{label}: fencing_transfer_state on the parents ({swapped})")
    if swapped != "swapped":
        return
    got = refusal(conn, 15, "INSERT INTO pev VALUES (2, 'us', -1)")
    report(got == "TF001", f"{label}: the new table refuses a stale re-insert of the deleted "
           f"key (got {got})")
    for what, token, sql in (
            ("a write through the old parent", 30, "UPDATE pev_old SET v = -1 WHERE id = 1"),
            ("a stale write to an old partition", 5, "UPDATE pev_eu SET v = -1 WHERE id = 1"),
            ("a token-less write to an old partition", None,
             "UPDATE pev_us SET v = -1 WHERE id = 3"),
            ("a stale re-insert into an old partition", 5,
             "INSERT INTO pev_us VALUES (2, 'us', -1)")):
        got = refusal(conn, token, sql)
        report(got not in ("accepted", "42P01"), f"{label}: the swapped-out table refuses {what} "
               f"(got {got})")
    conn.execute("DROP TABLE pev_old")


SECTIONS = {"django": django, "alembic": alembic, "activerecord": activerecord,
            "inplace": inplace, "swap": swap}


def main():
    names = sys.argv[1:] or list(SECTIONS)
    for name in names:
        if name not in SECTIONS:
            print(f"unknown section {name}; valid: {' '.join(SECTIONS)}", file=sys.stderr)
            return 2
    for name in names:
        t0 = time.time()
        s = SECTIONS[name]()
        s.finish()
        print(f"# section {name}: {time.time() - t0:.1f} s", flush=True)
    return fenced.finish()


if __name__ == "__main__":
    sys.exit(main())
