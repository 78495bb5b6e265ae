"""Bounded stress: fenced writers (UPDATE/DELETE/INSERT with globally increasing
tokens from a sequence) while a migrator cycles swaps (transfer_state), Alembic-
style recreates (lock first), row->table->row policy changes. Then: lost
acknowledged writes and stale writes accepted."""
import sys, time, random, multiprocessing as mp
import psycopg2
DSN = sys.argv[1]; SECONDS = float(sys.argv[2]); NW = int(sys.argv[3]); KEYS = 40
ISO = sys.argv[4] if len(sys.argv) > 4 else "READ COMMITTED"; LOCK = (sys.argv[5] if len(sys.argv) > 5 else "lock") == "lock"

def conn():
    c = psycopg2.connect(DSN); c.autocommit = True; return c

def writer(i, q):
    c = conn(); cur = c.cursor(); rnd = random.Random(i); acks = []; tried = 0; refused = 0
    end = time.time() + SECONDS
    while time.time() < end:
        k = rnd.randrange(KEYS); op = rnd.choice("uuudizz")
        tried += 1; t0 = time.time()
        try:
            cur.execute("BEGIN")
            cur.execute("SELECT nextval('tokseq')"); tok = cur.fetchone()[0]
            if op == "z": tok = max(2, tok - rnd.randrange(1, 60)); op = rnd.choice("ui")
            cur.execute("SET LOCAL fencing.token = %s", (tok,))
            if op == "u":
                cur.execute("UPDATE t SET v = %s WHERE id = %s", ("w%d" % tok, k)); n = cur.rowcount
            elif op == "d":
                cur.execute("DELETE FROM t WHERE id = %s", (k,)); n = cur.rowcount
            else:
                cur.execute("INSERT INTO t (id, v) VALUES (%s, %s) ON CONFLICT DO NOTHING", (k, "i%d" % tok)); n = cur.rowcount
            cur.execute("COMMIT")
            if n: acks.append((k, tok, op, t0, time.time()))
        except psycopg2.Error as e:
            refused += 1
            try: cur.execute("ROLLBACK")
            except psycopg2.Error: c = conn(); cur = c.cursor()
    q.put((tried, refused, acks))

def migrator(q):
    c = conn(); cur = c.cursor(); done = {"swap": 0, "recreate": 0, "policy": 0, "failed": 0}
    end = time.time() + SECONDS; n = 0
    while time.time() < end:
        n += 1; kind = ["swap", "recreate", "policy"][n % 3]
        try:
            cur.execute("BEGIN ISOLATION LEVEL " + ISO); cur.execute("SELECT 1")
            if kind == "swap":
                if LOCK: cur.execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
                cur.execute("CREATE TABLE t_new (LIKE t INCLUDING ALL)")
                cur.execute("INSERT INTO t_new SELECT * FROM t")
                cur.execute("SELECT fencing_transfer_state('t', 't_new')")
                cur.execute("ALTER TABLE t RENAME TO t_old; ALTER TABLE t_new RENAME TO t; DROP TABLE t_old")
            elif kind == "recreate":
                if LOCK: cur.execute("LOCK TABLE t IN ACCESS EXCLUSIVE MODE")
                cur.execute("SELECT conname FROM pg_constraint WHERE conrelid = 't'::regclass AND contype = 'p'")
                pk = cur.fetchone()[0]
                cur.execute('ALTER TABLE t DROP CONSTRAINT "%s"' % pk)
                cur.execute("CREATE TABLE _alembic_tmp_t (id int NOT NULL, v text, tok fencing_token, CONSTRAINT \"%s\" PRIMARY KEY (id))" % pk)
                cur.execute("INSERT INTO _alembic_tmp_t SELECT id, v, tok FROM t")
                cur.execute("DROP TABLE t; ALTER TABLE _alembic_tmp_t RENAME TO t")
            else:
                cur.execute("LOCK TABLE t IN SHARE ROW EXCLUSIVE MODE")
                cur.execute("SELECT fencing_protect('t', scope => 'table')")
                cur.execute("COMMIT"); time.sleep(0.3); cur.execute("BEGIN")
                cur.execute("LOCK TABLE t IN SHARE ROW EXCLUSIVE MODE")
                cur.execute("SELECT fencing_high_water('t')"); h = cur.fetchone()[0]
                cur.execute("SELECT fencing_allow_unfenced('t', 'raise before row scope')")
                cur.execute("UPDATE t SET tok = %s WHERE tok < %s::fencing_token", (h, h))
                cur.execute("SELECT fencing_protect('t', scope => 'row')")
            cur.execute("COMMIT"); done[kind] += 1
        except psycopg2.Error as e:
            done["failed"] += 1; print("migration", kind, "failed:", str(e).splitlines()[0], file=sys.stderr)
            try: cur.execute("ROLLBACK")
            except psycopg2.Error: c = conn(); cur = c.cursor()
        time.sleep(0.2)
    q.put(("migrator", done))

if __name__ == "__main__":
    c = conn(); cur = c.cursor()
    cur.execute("DROP TABLE IF EXISTS t, t_new, t_old, _alembic_tmp_t; DROP SEQUENCE IF EXISTS tokseq; CREATE SEQUENCE tokseq")
    cur.execute("CREATE TABLE t (id int PRIMARY KEY, v text, tok fencing_token)")
    cur.execute("SELECT nextval('tokseq')")
    cur.execute("BEGIN; SET LOCAL fencing.token = 1; INSERT INTO t (id, v) SELECT g, 'init' FROM generate_series(0, %s) g; COMMIT", (KEYS - 1,))
    q = mp.Queue(); ps = [mp.Process(target=writer, args=(i, q)) for i in range(NW)] + [mp.Process(target=migrator, args=(q,))]
    for p in ps: p.start()
    res = [q.get() for _ in ps]
    for p in ps: p.join()
    tried = refused = 0; acks = []
    for r in res:
        if r[0] == "migrator": print("migrations:", r[1]); continue
        tried += r[0]; refused += r[1]; acks += r[2]
    stale_run = 0
    byk = {}
    for a in acks: byk.setdefault(a[0], []).append(a)
    for k, lst in byk.items():
        lst.sort(key=lambda a: a[4])
        for j, (_, tok2, op2, s2, e2) in enumerate(lst):
            if any(e1 < s2 and tok1 > tok2 for (_, tok1, _, _, e1) in lst[:j]): stale_run += 1
    print("stale writes accepted during the run (acked after a higher token's ack):", stale_run)
    last = {}
    for k, tok, op, _, _ in acks:
        if k not in last or tok > last[k][0]: last[k] = (tok, op)
    lost = 0; stale_ok = 0
    for k, (tok, op) in sorted(last.items()):
        cur.execute("SELECT tok::text::bigint FROM t WHERE id = %s", (k,)); row = cur.fetchone()
        if op == "d":
            if row is not None and row[0] < tok: lost += 1
        elif row is None or row[0] < tok: lost += 1
        try:
            cur.execute("BEGIN"); cur.execute("SET LOCAL fencing.token = %s", (tok - 1,))
            if row is None:
                cur.execute("INSERT INTO t (id, v) VALUES (%s, 'stale')", (k,))
            else:
                cur.execute("UPDATE t SET v = 'stale' WHERE id = %s", (k,))
            n = cur.rowcount
            cur.execute("ROLLBACK")
            if n != 0: stale_ok += 1
        except psycopg2.Error:
            cur.execute("ROLLBACK")
    print("writes attempted %d, acknowledged %d, refused/failed %d; keys checked %d; acknowledged writes lost %d; stale writes accepted %d"
          % (tried, len(acks), refused, len(last), lost, stale_ok))
