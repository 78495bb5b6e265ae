#!/usr/bin/python3
"""The client libraries' conformance suite: the same cases, with the same
timings, against every library's agent (PROTOCOL.md), on a scratch cluster of
its own. Prints one TAP line per (library, case) and a table per library.

    clients/conformance/run.py [--agents python,node] [--cases waited_acquire,sigstop]

Environment: CONFORMANCE_PGPORT (default 55450) and CONFORMANCE_DIR for the
cluster; CONFORMANCE_KEEP=1 keeps the logs (build/conformance/ always has them).
Needs the extension installed (make install) and python3-psycopg.
"""
import argparse
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time

import psycopg

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
AGENTS = os.path.join(HERE, "agents")
LOGDIR = os.path.join(ROOT, "build", "conformance")

TTL = 3.0                 # the standard cases' lease
MARGIN = max(TTL / 5, 0.05)
RENEW = TTL / 3
RESTART_TTL = 5.0
SLACK = 0.25              # the library's own allowance on an idle machine, seconds; the
                          # machine's measured scheduling delay is added to it (Probe)
NS = "conformance"
TABLE = "conformance_t"   # the current case's table: main() names one per agent and case
RENEWALS = "conformance_renewals"  # the server's record of every call that set an expiry


class CaseFail(Exception):
    pass


def need(cond, why):
    if not cond:
        raise CaseFail(why)


# ------------------------------------------------------------------ scheduling delay

PROBE_SRC = "import sys, time\nfor _ in sys.stdin:\n    print(repr(time.time()), flush=True)\n"


class Probe:
    """A trivial process blocked in read(): the time it takes to answer a
    line is this machine's scheduling delay right now. sample() measures one
    round trip; resume_delay() measures how long after SIGCONT a stopped
    process runs again (the runner stops and continues it with the agent)."""

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, "-u", "-c", PROBE_SRC], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, bufsize=1)
        self.samples = []  # (time, round trip)
        self.sample()

    def _ask(self):
        self.proc.stdin.write("\n")
        self.proc.stdin.flush()

    def sample(self):
        t0 = time.time()
        self._ask()
        self.proc.stdout.readline()
        t1 = time.time()
        self.samples.append((t1, t1 - t0))
        return t1 - t0

    def worst(self, since, until):
        """The longest round trip measured in [since, until] (0 if none)."""
        return max((d for t, d in self.samples if since <= t <= until), default=0.0)

    def stop(self):
        os.kill(self.proc.pid, signal.SIGSTOP)
        self._ask()  # waits in the pipe until SIGCONT

    def resume_delay(self, t_cont):
        """After cont(): when the stopped probe answered, relative to t_cont."""
        return float(self.proc.stdout.readline()) - t_cont

    def cont(self):
        os.kill(self.proc.pid, signal.SIGCONT)

    def close(self):
        self.proc.kill()
        self.proc.wait()


class Sampler(threading.Thread):
    """Samples a Probe every 0.1 s for the whole run."""

    def __init__(self):
        super().__init__(daemon=True)
        self.probe = Probe()
        self.done = threading.Event()

    def run(self):
        while not self.done.wait(0.1):
            self.probe.sample()

    def worst(self, since, until):
        return self.probe.worst(since, until)


SAMPLER = None
STOP_PROBE = None


# ------------------------------------------------------------------ the cluster

class Cluster:
    def __init__(self, port, root):
        self.port, self.root = str(port), root
        self.env = dict(os.environ, FENCING_PGPORT=self.port, FENCING_CLUSTER_DIR=root)
        self.data = os.path.join(root, "data")
        self.sock = os.path.join(root, "sock")
        self.bindir = subprocess.check_output(["pg_config", "--bindir"], text=True).strip()

    def cluster_sh(self, what):
        subprocess.run([os.path.join(ROOT, "test", "cluster.sh"), what], env=self.env, check=True)

    def pg_env(self):
        return {"PGHOST": self.sock, "PGPORT": self.port, "PGUSER": "postgres", "PGDATABASE": "postgres"}

    def connect(self, **kw):
        e = self.pg_env()
        return psycopg.connect(host=e["PGHOST"], port=e["PGPORT"], user="postgres", dbname="postgres",
                               autocommit=True, prepare_threshold=None, **kw)

    def as_server_user(self, argv):
        if os.getuid() == 0:
            argv = ["runuser", "-u", "postgres", "--", "env", "-C", self.root] + argv
        return subprocess.run(argv, capture_output=True, text=True)

    def pg_ctl(self, *args):
        r = self.as_server_user([os.path.join(self.bindir, "pg_ctl"), "-D", self.data, "-l",
                                 os.path.join(self.root, "server.log"), "-w", "-t", "60", *args])
        if r.returncode != 0:
            raise RuntimeError(f"pg_ctl {args}: {r.stdout}{r.stderr}")

    def kill9(self):
        with open(os.path.join(self.data, "postmaster.pid")) as f:
            pm = int(f.readline())
        children = subprocess.run(["pgrep", "-P", str(pm)], capture_output=True, text=True).stdout.split()
        os.kill(pm, signal.SIGKILL)
        for c in children:
            try:
                os.kill(int(c), signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        for c in children + [str(pm)]:
            while time.monotonic() < deadline and os.path.exists(f"/proc/{c}"):
                time.sleep(0.02)
        self.pg_ctl("start")

    def wait_ready(self, limit=30):
        end = time.monotonic() + limit
        while True:
            try:
                self.connect(connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > end:
                    raise
                time.sleep(0.05)


# ------------------------------------------------------------------ an agent

class Agent:
    def __init__(self, name, cluster, log):
        self.name = name
        self.log = log
        env = dict(os.environ, **cluster.pg_env())
        self.proc = subprocess.Popen([os.path.join(AGENTS, name, "run")], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=log, text=True, bufsize=1,
                                     env=env, cwd=os.path.join(AGENTS, name))
        self.responses = queue.Queue()
        self.events = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()
        self.hello = self.call("hello", timeout=60)
        self.pid = int(self.hello["pid"])

    def _read(self):
        for line in self.proc.stdout:
            self.log.write("< " + line)
            self.log.flush()
            try:
                msg = json.loads(line)
            except ValueError:
                continue
            if "event" in msg:
                msg["received"] = time.time()
                self.events.append(msg)
            else:
                self.responses.put(msg)
        self.responses.put(None)

    def send(self, cmd, **fields):
        self.next_id += 1
        msg = dict(fields, id=self.next_id, cmd=cmd)
        line = json.dumps(msg)
        self.log.write("> " + line + "\n")
        self.log.flush()
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.next_id

    def wait(self, rid, timeout=30):
        try:
            r = self.responses.get(timeout=timeout)
        except queue.Empty:
            raise CaseFail(f"no answer from the agent within {timeout} s") from None
        if r is None:
            raise CaseFail(f"the agent exited (status {self.proc.poll()})")
        need(r.get("id") == rid, f"answer out of order: {r}")
        return r

    def call(self, cmd, timeout=30, **fields):
        """The result of cmd; raises CaseFail on an error answer."""
        r = self.wait(self.send(cmd, **fields), timeout)
        need(r.get("ok"), f"{cmd} failed: {r.get('error')}")
        return r

    def attempt(self, cmd, timeout=30, **fields):
        """The answer of cmd, ok or not."""
        return self.wait(self.send(cmd, **fields), timeout)

    def lost_events(self, lease):
        return [e for e in self.events if e.get("event") == "lost" and e.get("lease") == lease]

    def wait_lost(self, lease, timeout):
        end = time.monotonic() + timeout
        while True:
            ev = self.lost_events(lease)
            if ev:
                return ev[0]
            if time.monotonic() >= end:
                return None
            time.sleep(0.01)

    def stop(self):
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGCONT)
                self.send("quit")
                self.proc.wait(timeout=10)
            except Exception:
                self.proc.kill()
                self.proc.wait()


# ------------------------------------------------------------------ the server's view

def server_lease(db, resource):
    return db.execute(
        "SELECT token::text, extract(epoch FROM expires_at)::float8, live, holder FROM fencing_leases"
        " WHERE namespace = %s AND resource = %s", (NS, resource)).fetchone()


def row(db, rid, table=None):
    return db.execute(f"SELECT v, n, fence::text FROM {table or TABLE} WHERE id = %s", (rid,)).fetchone()


def runner_write(db, token, rid, value, table=None):
    with db.transaction():
        db.execute("SELECT pg_catalog.set_config('fencing.token', %s, true)", (str(token),))
        db.execute(f"UPDATE {table or TABLE} SET v = %s, n = n + 1 WHERE id = %s", (value, rid))


def expiries(db, res, token):
    """Every call that set the agent's lease's expiry, as the server recorded
    it (RENEWALS): [(executed_at, expires_at)], oldest first."""
    return db.execute(
        f"SELECT extract(epoch FROM executed_at)::float8, extract(epoch FROM expires_at)::float8"
        f"  FROM {RENEWALS} WHERE namespace = %s AND resource = %s AND token = %s ORDER BY executed_at",
        (NS, res, int(token))).fetchall()


def check_timing(ev, db, res, margin, stopped_until=None, unconfirmed=0.0, resume_delay=0.0):
    """Never early, never late (PROTOCOL.md).

    Early is measured against the latest expiry set by a call the server
    executed before the lost event: only such a call can have been confirmed
    to the library in time. A renewal sent before the deadline but executed
    after the lost event (a cancel raced with it) set an expiry the library
    never saw confirmed; losing the lease then is what the contract says.
    The allowance is SLACK plus the worst scheduling delay the sampler
    measured in the TTL before the event (the send-to-execute delay of the
    call the library counted from). unconfirmed: in a crash, a renewal can
    commit while its answer is lost; the library rightly counts from the
    last renewal it saw confirmed, up to one renewal interval before.

    Late is measured against the last expiry the server set at all; a
    stopped agent may be late until SIGCONT + SLACK + resume_delay (how long a
    trivial process continued at the same moment took to run)."""
    at = float(ev["at"])
    calls = expiries(db, res, ev["token"])
    need(calls, f"the server recorded no call for token {ev['token']}")
    final = max(e for _, e in calls)
    before = [e for x, e in calls if x <= at]
    after = [x - at for x, e in calls if x > at and e > max(before, default=0.0)]
    confirmed = max(before, default=final)
    notes = []
    if ev.get("reason") == "expired":
        sched = SAMPLER.worst(at - 5 * margin - 1.0, at) if SAMPLER else 0.0
        need(at >= confirmed - margin - unconfirmed - SLACK - sched,
             f"lost EARLY: at {at - confirmed:+.3f} s from the expiry of the last call executed before it"
             f" (margin {margin}, scheduling delay {sched:.3f} s)")
        notes.append(f"lost {at - confirmed:+.3f} s from the confirmed expiry")
        if after:
            notes.append(f"a renewal executed {after[0]:+.3f} s after the lost event (unconfirmed)")
    if stopped_until is not None:
        limit = stopped_until + SLACK + resume_delay
        need(at <= max(final, limit),
             f"lost LATE: {at - stopped_until:+.3f} s after SIGCONT (limit {SLACK} + {resume_delay:.3f} s)")
    else:
        need(at <= final, f"lost LATE: {at - final:+.3f} s after the server's expiry")
    return "; ".join(notes)


def self_test():
    """check_timing's rules on recorded calls (no cluster): the early case
    of a renewal executed after the lost event, and the failures it must
    still report."""
    global expiries
    real, m, ttl = expiries, MARGIN, TTL
    t = 1000.0
    base = [(t, t + ttl), (t + 1, t + 1 + ttl)]  # acquire, one confirmed renewal at t+1
    deadline = t + 1 + ttl - m

    def verdict(calls, at, **kw):
        globals()["expiries"] = lambda db, res, token: calls
        try:
            check_timing({"at": at, "reason": "expired", "token": "1"}, None, "r", m, **kw)
            return "pass"
        except CaseFail as e:
            return str(e)
    try:
        late_renewal = base + [(deadline + 0.18, deadline + 0.18 + ttl)]
        checks = [
            ("lost at the deadline", verdict(base, deadline), True),
            ("a renewal executed 0.18 s after the lost event", verdict(late_renewal, deadline), True),
            ("lost a second before a confirmed expiry", verdict(base, deadline - 1.0), False),
            ("a confirmed renewal 1 s before the lost event",
             verdict(base + [(deadline - 1.0, deadline - 1.0 + ttl)], deadline), False),
            ("lost after the server's expiry", verdict(base, t + 1 + ttl + 0.1), False),
            ("stopped: within SIGCONT + slack", verdict(base, t + 10.2, stopped_until=t + 10), True),
            ("stopped: past SIGCONT + slack", verdict(base, t + 10.5, stopped_until=t + 10), False),
            ("stopped: within the measured resume delay",
             verdict(base, t + 10.5, stopped_until=t + 10, resume_delay=0.3), True),
        ]
    finally:
        globals()["expiries"] = real
    bad = 0
    for i, (what, got, want_pass) in enumerate(checks, 1):
        ok = (got == "pass") == want_pass
        bad += not ok
        print(f"{'ok' if ok else 'not ok'} {i} - check_timing: {what}: {got}")
    print(f"1..{len(checks)}")
    sys.exit(1 if bad else 0)


def kind(answer):
    return None if answer.get("ok") else (answer.get("error") or {}).get("kind")


# ------------------------------------------------------------------ the cases

def case_waited_acquire(a, db, c, res):
    tok0 = db.execute("SELECT fencing_acquire(%s, 'runner', %s::interval, NULL, %s)::text",
                      (res, f"{TTL} s", NS)).fetchone()[0]
    t = threading.Timer(2.5, lambda: c.connect().execute(
        "SELECT fencing_release(%s, %s::text::fencing_token, %s)", (res, tok0, NS)))
    t.start()
    r = a.call("acquire", timeout=20, lease="L", resource=res, namespace=NS, holder="agent",
               ttl_ms=TTL * 1000, wait_ms=10000)
    waited = r["returned_at"] - r["sent_at"]
    need(waited >= 2.3, f"acquire returned after {waited:.2f} s, not after the predecessor's release")
    time.sleep(3 * TTL)
    need(not a.lost_events("L"), f"FALSE LOST after a {waited:.2f} s wait: {a.lost_events('L')}")
    srv = server_lease(db, res)
    need(srv and srv[2] and srv[0] == r["token"], f"the server's lease is not the agent's live one: {srv}")
    w = a.call("write", lease="L", table=TABLE, row=1, value="waited")
    need(w["rows"] == 1, f"write: {w}")
    a.call("close", lease="L")
    return f"waited {waited:.2f} s, held {3 * TTL:.0f} s, no lost"


def _acquire(a, res, ttl=TTL):
    return a.call("acquire", lease="L", resource=res, namespace=NS, holder="agent", ttl_ms=ttl * 1000,
                  wait_ms=None)


def _stop_past_ttl(a, db, res, rid):
    """SIGSTOP the agent past its TTL; the runner takes the lease and writes
    row rid under its new token; returns (runner token, SIGCONT time, the
    delay a trivial process continued at the same moment took to run)."""
    a.call("write", lease="L", table=TABLE, row=rid, value="agent-before")
    t_stop = time.time()
    os.kill(a.pid, signal.SIGSTOP)
    time.sleep(0.5)
    tok2 = db.execute("SELECT fencing_acquire(%s, 'runner', '30 s', '10 s', %s)::text",
                      (res, NS)).fetchone()[0]
    need(tok2 is not None, "the runner could not take the lease after the agent's TTL")
    runner_write(db, tok2, rid, "runner")
    time.sleep(max(0.0, t_stop + TTL + 1.5 - time.time()))
    STOP_PROBE.stop()
    t_cont = time.time()
    os.kill(a.pid, signal.SIGCONT)
    STOP_PROBE.cont()
    return tok2, t_cont, STOP_PROBE.resume_delay(t_cont)


def case_sigstop(a, db, c, res):
    _acquire(a, res)
    tok2, t_cont, resumed = _stop_past_ttl(a, db, res, 2)
    w = a.attempt("write", lease="L", table=TABLE, row=2, value="late")
    need(kind(w) == "LeaseLost", f"the late write was not refused as LeaseLost: {w}")
    ev = a.wait_lost("L", 1.0)
    need(ev is not None, "no lost event after SIGCONT")
    need(ev["reason"] == "expired", f"reason {ev['reason']}, not expired")
    note = check_timing(ev, db, res, MARGIN, stopped_until=t_cont, resume_delay=resumed)
    need(row(db, 2)[0] == "runner", f"row 2 changed: {row(db, 2)}")
    a.call("close", lease="L")
    db.execute("SELECT fencing_release(%s, %s::text::fencing_token, %s)", (res, tok2, NS))
    return (f"lost {float(ev['at']) - t_cont:+.3f} s after SIGCONT (a trivial process: {resumed:+.3f} s);"
            f" late write refused" + (f"; {note}" if note else ""))


def case_refused_renewal(a, db, c, res):
    r = _acquire(a, res)
    time.sleep(0.2)
    t_rel = time.time()
    ok = db.execute("SELECT fencing_release(%s, %s::text::fencing_token, %s)", (res, r["token"], NS)).fetchone()[0]
    need(ok, "the runner could not end the agent's lease")
    ev = a.wait_lost("L", RENEW * 1.2 + 0.5)
    need(ev is not None, f"no lost event within {RENEW * 1.2 + 0.5:.1f} s of the refusal")
    need(ev["reason"] == "refused", f"reason {ev['reason']}, not refused")
    w = a.attempt("write", lease="L", table=TABLE, row=3, value="after-refusal")
    need(kind(w) == "LeaseLost", f"write after the refusal: {w}")
    a.call("close", lease="L")
    return f"lost (refused) {float(ev['at']) - t_rel:.2f} s after the server ended the lease"


def _lock_lease_row(c, res):
    lock = c.connect()
    lock.autocommit = False
    lock.execute("SELECT 1 FROM fencing.lease WHERE namespace = %s AND resource = %s FOR UPDATE", (NS, res))
    return lock


def case_commit_check(a, db, c, res):
    _acquire(a, res)
    before = row(db, 4)
    lock = _lock_lease_row(c, res)
    try:
        w = a.attempt("write", timeout=TTL + 10, lease="L", table=TABLE, row=4, value="held-past-lost",
                      hold_ms=TTL * 1000)
        srv = server_lease(db, res)
    finally:
        lock.rollback()
        lock.close()
    need(kind(w) == "LeaseLost", f"a transaction committed under a lease lost before its COMMIT: {w}")
    need(row(db, 4) == before, f"row 4 changed: {before} -> {row(db, 4)}")
    ev = a.wait_lost("L", 1.0)
    need(ev is not None, "no lost event")
    note = check_timing(ev, db, res, MARGIN)
    a.call("close", lease="L")
    return f"refused before COMMIT; {note}"


def _wait_blocked_renewal(db, limit):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        n = db.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                       " AND query LIKE '%fencing_renew%'").fetchone()[0]
        if n:
            return True
        time.sleep(0.02)
    return False


def case_close_during_renewal(a, db, c, res):
    _acquire(a, res)
    lock = _lock_lease_row(c, res)
    try:
        need(_wait_blocked_renewal(db, RENEW * 1.5 + 0.5), "no renewal blocked on the locked lease row")
        t_close = time.time()
        rid = a.send("close", lease="L")
        time.sleep(1.5)
    finally:
        lock.rollback()
        lock.close()
    r = a.wait(rid, timeout=TTL + 5)
    took = time.time() - t_close
    need(r.get("ok"), f"close failed: {r}")
    need(took <= TTL + 1, f"close took {took:.2f} s")
    t_ret = time.time()
    time.sleep(0.5)
    srv = server_lease(db, res)
    st = a.call("state", lease="L")
    w = a.attempt("write", lease="L", table=TABLE, row=5, value="after-close")
    time.sleep(1.0)
    need(not a.lost_events("L"), f"a lost event for a closed lease: {a.lost_events('L')}")
    need(st["state"] == "closed" and st["closed"] and not st["lost"], f"state after close: {st}")
    need(kind(w) == "LeaseClosed", f"write after close: {w}")
    need(not srv[2] or srv[1] <= t_close + TTL + SLACK,
         f"the lease is live on the server after close returned (expires {srv[1] - t_ret:+.2f} s)")
    return f"close returned after {took:.2f} s; server lease live={srv[2]}"


def case_release_lost(a, db, c, res):
    _acquire(a, res)
    tok2, t_cont, resumed = _stop_past_ttl(a, db, res, 6)
    ev = a.wait_lost("L", 1.0)
    need(ev is not None, "no lost event after SIGCONT")
    check_timing(ev, db, res, MARGIN, stopped_until=t_cont, resume_delay=resumed)
    r = a.attempt("release", lease="L")
    need(r.get("ok"), f"release of a lost lease raised: {r}")
    need(r.get("released") is False, f"release of a lost lease said released={r.get('released')}")
    st = a.call("state", lease="L")
    need(st["state"] == "closed" and st["lost"] and st["closed"], f"state after releasing a lost lease: {st}")
    w = a.attempt("write", lease="L", table=TABLE, row=6, value="late")
    need(kind(w) == "LeaseClosed", f"write after release: {w}")
    need(len(a.lost_events("L")) == 1, f"lost events: {a.lost_events('L')}")
    srv = server_lease(db, res)
    need(srv[2] and srv[0] == tok2, f"the runner's lease was touched: {srv}")
    a.call("close", lease="L")
    db.execute("SELECT fencing_release(%s, %s::text::fencing_token, %s)", (res, tok2, NS))
    return "released=false, closed, lost kept"


def case_stale_fenced(a, db, c, res):
    r = _acquire(a, res)
    hwm = int(r["token"]) + 5
    db.execute(f"SELECT fencing_advance('{TABLE}', %s::text::fencing_token, '{{\"id\": 7}}')", (str(hwm),))
    w = a.attempt("fenced_update", lease="L", table=TABLE, row=7, value="stale")
    need(kind(w) == "StaleToken", f"fenced_update under a stale token: {w}")
    f = w["error"].get("fields") or {}
    need(str(f.get("offered")) == r["token"] and str(f.get("hwm")) == str(hwm), f"fields: {f}")
    a.call("close", lease="L")
    return f"StaleToken offered {f.get('offered')} hwm {f.get('hwm')}"


def _preload(c, h, a, on):
    """The library in shared_preload_libraries (a takeover ends a writer
    with TF003) or not (57P01, the default of the other cases)."""
    h[0].execute("ALTER SYSTEM SET shared_preload_libraries = 'fencing'" if on
                 else "ALTER SYSTEM RESET shared_preload_libraries")
    h[0].close()
    c.pg_ctl("restart", "-m", "fast")
    c.wait_ready()
    h[0] = c.connect()
    a.call("reconnect")


def _res_table(db, res):
    """A table of resource scope for the case's resource: a takeover ends
    only writers holding that resource's HWM lock (docs/guarantees.md)."""
    t = TABLE + "_r"
    db.execute(f"CREATE TABLE {t} (id int PRIMARY KEY, res text NOT NULL, v text, n int NOT NULL DEFAULT 0,"
               " fence fencing_token)")
    db.execute("SELECT fencing_protect(%s, scope => 'resource', resource_column => 'res',"
               " resource_namespace => %s)", (t, NS))
    with db.transaction():
        db.execute("SELECT pg_catalog.set_config('fencing.token', '1', true)")
        db.execute(f"INSERT INTO {t} (id, res, v) VALUES (1, %s, 'init')", (res,))
    return t


def _write_in_sleep(a, db, table, hold):
    """The agent's write: UPDATE row 1 of table, then a server-side pg_sleep
    in the same transaction (its backend holds the resource's HWM lock)."""
    req = a.send("write", lease="L", table=table, row=1, value="cut-off", hold_server_ms=hold * 1000)
    end = time.monotonic() + 5
    while not db.execute("SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep%'"
                         " AND state = 'active' AND pid <> pg_backend_pid()").fetchone()[0]:
        need(time.monotonic() < end, "the agent's write never reached its pg_sleep")
        time.sleep(0.02)
    return req


def _cut_off(a, req, codes):
    """The cut-off write raised LeaseTakenOver with one of codes (None: the
    driver lost the FATAL's SQLSTATE, psycopg 3.1)."""
    w = a.wait(req, timeout=15)
    need(kind(w) == "LeaseTakenOver" and w["error"].get("sqlstate") in codes,
         f"the cut-off write did not raise LeaseTakenOver ({codes}): {w}")


def case_takeover(a, h, c, res):
    """Preloaded: the agent's lease ends behind its back while its write is
    in a long transaction; the runner's acquire takes over at once: TF003,
    reason takeover (before any renewal could see the release)."""
    _preload(c, h, a, True)
    try:
        db = h[0]
        t = _res_table(db, res)
        tok = _acquire(a, res)["token"]
        req = _write_in_sleep(a, db, t, 3 * TTL)
        n0 = len(expiries(db, res, tok))
        end = time.monotonic() + RENEW * 2
        while len(expiries(db, res, tok)) == n0:  # right after a renewal: the next is >= 0.8 s away
            need(time.monotonic() < end, "no renewal")
            time.sleep(0.01)
        db.execute("SELECT fencing_release(%s, %s::text::fencing_token, %s)", (res, tok, NS))
        tok2 = db.execute("SELECT fencing_acquire(%s, 'runner', '30 s', '5 s', %s)::text", (res, NS)).fetchone()[0]
        need(tok2 is not None, "the runner's acquire did not take over")
        _cut_off(a, req, ("TF003",))
        ev = a.wait_lost("L", 1.0)
        need(ev is not None and ev["reason"] == "takeover", f"lost event: {ev}")
        need(row(db, 1, t)[0] == "init", f"the cut-off write committed: {row(db, 1, t)}")
        runner_write(db, tok2, 1, "runner", t)
        a.call("reconnect")
        w = a.attempt("write", lease="L", table=t, row=1, value="stale")
        need(kind(w) in ("LeaseLost", "LeaseTakenOver"), f"write after the takeover: {w}")
        need(row(db, 1, t)[0] == "runner", f"row: {row(db, 1, t)}")
        need(len(a.lost_events("L")) == 1, f"lost events: {a.lost_events('L')}")
        a.call("close", lease="L")
        db.execute("SELECT fencing_release(%s, %s::text::fencing_token, %s)", (res, tok2, NS))
        return "write cut off: LeaseTakenOver TF003; lost reason takeover; no stale write"
    finally:
        _preload(c, h, a, False)


def case_takeover_paused(a, db, c, res):
    """Not preloaded: the agent is SIGSTOPped in its long transaction past
    its TTL; the runner's waited acquire takes over (57P01). On SIGCONT the
    deadline has passed: lost reason expired (never late), then the write
    raises LeaseTakenOver."""
    t = _res_table(db, res)
    tok = _acquire(a, res)["token"]
    req = _write_in_sleep(a, db, t, TTL + 6)
    t_stop = time.time()
    os.kill(a.pid, signal.SIGSTOP)
    tok2 = db.execute("SELECT fencing_acquire(%s, 'runner', '30 s', '10 s', %s)::text", (res, NS)).fetchone()[0]
    need(tok2 is not None, "the runner's acquire did not take over")
    need(row(db, 1, t)[0] == "init", f"the cut-off write committed: {row(db, 1, t)}")
    runner_write(db, tok2, 1, "runner", t)
    time.sleep(max(0.0, t_stop + TTL + 1.5 - time.time()))
    STOP_PROBE.stop()
    t_cont = time.time()
    os.kill(a.pid, signal.SIGCONT)
    STOP_PROBE.cont()
    resumed = STOP_PROBE.resume_delay(t_cont)
    _cut_off(a, req, ("57P01", None))
    ev = a.wait_lost("L", 1.0)
    need(ev is not None and ev["reason"] == "expired", f"lost event: {ev}")
    note = check_timing(ev, db, res, MARGIN, stopped_until=t_cont, resume_delay=resumed)
    need(row(db, 1, t)[0] == "runner", f"row: {row(db, 1, t)}")
    a.call("close", lease="L")
    db.execute("SELECT fencing_release(%s, %s::text::fencing_token, %s)", (res, tok2, NS))
    return f"LeaseTakenOver after lost (expired); token {tok} -> {tok2}" + (f"; {note}" if note else "")


def case_terminate_held(a, db, c, res):
    """57P01 on a held lease (pg_terminate_backend, as a shutdown sends it)
    is not a takeover: a plain Database error, no lost event, still held."""
    t = _res_table(db, res)
    _acquire(a, res)
    req = _write_in_sleep(a, db, t, 2)
    db.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE '%pg_sleep%'"
               " AND state = 'active' AND pid <> pg_backend_pid()")
    w = a.wait(req, timeout=10)
    need(kind(w) == "Database" and w["error"].get("sqlstate") in ("57P01", None), f"write: {w}")
    time.sleep(RENEW * 1.5)
    st = a.call("state", lease="L")
    need(not a.lost_events("L") and st["state"] == "held", f"lost: {a.lost_events('L')}; state {st}")
    a.call("reconnect")
    need(a.call("write", lease="L", table=t, row=1, value="after")["rows"] == 1, "write after reconnect")
    a.call("close", lease="L")
    return "57P01 on a held lease: Database error, still held, next write commits"


def _restart(a, db_holder, c, res, how):
    r = _acquire(a, res, ttl=RESTART_TTL)
    margin = RESTART_TTL / 5
    a.call("write", lease="L", table=TABLE, row=8, value="before-restart")
    time.sleep(0.5)
    t0 = time.time()
    db_holder[0].close()
    if how == "kill9":
        c.kill9()
    else:
        c.pg_ctl("restart", "-m", how)
    c.wait_ready()
    down = time.time() - t0
    db = db_holder[0] = c.connect()
    a.call("reconnect")
    time.sleep(RESTART_TTL / 3 * 1.3)
    ev = a.wait_lost("L", 0)
    srv = server_lease(db, res)
    w = a.attempt("write", lease="L", table=TABLE, row=8, value="after-restart")
    ev = a.wait_lost("L", 0) or ev
    if ev is not None:
        note = check_timing(ev, db, res, margin, unconfirmed=RESTART_TTL / 3 * 1.2)
        need(kind(w) == "LeaseLost", f"write of a lost lease: {w}")
        outcome = f"lost (not early, not late): {note}"
    else:
        need(srv[2], f"the library says held, the server says not live: {srv}")
        need(w.get("ok") and w["rows"] == 1, f"write after the restart: {w}")
        outcome = "survived, write committed"
    a.call("close", lease="L")
    return f"server down {down:.2f} s; {outcome}"


CASES = {
    "waited_acquire": case_waited_acquire,
    "sigstop": case_sigstop,
    "refused_renewal": case_refused_renewal,
    "commit_check": case_commit_check,
    "close_during_renewal": case_close_during_renewal,
    "release_lost": case_release_lost,
    "stale_fenced": case_stale_fenced,
    "takeover": case_takeover,
    "takeover_paused": case_takeover_paused,
    "terminate_held": case_terminate_held,
    "restart_fast": lambda a, h, c, r: _restart(a, h, c, r, "fast"),
    "restart_immediate": lambda a, h, c, r: _restart(a, h, c, r, "immediate"),
    "restart_kill9": lambda a, h, c, r: _restart(a, h, c, r, "kill9"),
}
RESTARTS = {"restart_fast", "restart_immediate", "restart_kill9", "takeover"}  # given the holder


def setup_run(c):
    """Once per run: the extension, and the server's record of every call
    that sets a lease's expiry in the runner's namespace (executed_at is the
    call's clock_timestamp(), in the call's own transaction: it survives a
    crash exactly when the renewal does)."""
    db = c.connect()
    db.execute("CREATE EXTENSION IF NOT EXISTS fencing")
    db.execute(f"DROP TABLE IF EXISTS {RENEWALS}")
    db.execute(f"CREATE TABLE public.{RENEWALS} (namespace text, resource text, token int8,"
               " executed_at timestamptz, expires_at timestamptz)")
    db.execute(f"""CREATE OR REPLACE FUNCTION public.conformance_record() RETURNS trigger
        LANGUAGE plpgsql SET search_path = pg_catalog AS $$
        BEGIN
            IF NEW.namespace = '{NS}' AND (TG_OP = 'INSERT' OR NEW.expires_at IS DISTINCT FROM OLD.expires_at
                                           OR NEW.token IS DISTINCT FROM OLD.token) THEN
                INSERT INTO public.{RENEWALS}
                    VALUES (NEW.namespace, NEW.resource, NEW.token, clock_timestamp(), NEW.expires_at);
            END IF;
            RETURN NULL;
        END $$""")
    db.execute("DROP TRIGGER IF EXISTS conformance_record ON fencing.lease")
    db.execute("CREATE TRIGGER conformance_record AFTER INSERT OR UPDATE ON fencing.lease"
               " FOR EACH ROW EXECUTE FUNCTION public.conformance_record()")
    return db


def setup_case(db, table):
    """A table of the case's own (and of this agent's), under a name never
    used before (the run's id is in it): no row HWM of another case or agent
    can reach it, whatever DROP and CREATE under one name carry across (the
    design wants a recreated table to keep its HWMs)."""
    global TABLE
    TABLE = table
    db.execute(f"CREATE TABLE {TABLE} (id int PRIMARY KEY, v text, n int NOT NULL DEFAULT 0,"
               " fence fencing_token)")
    with db.transaction():
        db.execute("SELECT pg_catalog.set_config('fencing.token', '1', true)")
        db.execute(f"INSERT INTO {TABLE} (id, v) SELECT g, 'init' FROM generate_series(1, 10) g")


def build(name, log):
    path = os.path.join(AGENTS, name)
    b = os.path.join(path, "build")
    if os.path.exists(b):
        r = subprocess.run([b], cwd=path, stdout=subprocess.PIPE, stderr=log, text=True)
        if r.returncode == 77:
            lines = r.stdout.strip().splitlines()
            return "skip", lines[-1] if lines else "skipped by its build"
        if r.returncode != 0:
            return "fail", f"build failed (status {r.returncode}): {r.stdout.strip()[-300:]}"
    if not os.access(os.path.join(path, "run"), os.X_OK):
        return "fail", "no executable run"
    return "ok", ""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agents", default="")
    ap.add_argument("--cases", default="")
    ap.add_argument("--self-test", action="store_true", help="check_timing's rules only, no cluster")
    args = ap.parse_args()
    if args.self_test:
        self_test()
    names = [n for n in args.agents.split(",") if n] or sorted(
        d for d in os.listdir(AGENTS) if os.path.isdir(os.path.join(AGENTS, d)))
    cases = [n for n in args.cases.split(",") if n] or list(CASES)
    unknown = [n for n in cases if n not in CASES]
    if unknown:
        sys.exit(f"unknown case {unknown}; cases: {list(CASES)}")
    os.makedirs(LOGDIR, exist_ok=True)
    port = int(os.environ.get("CONFORMANCE_PGPORT", "55450"))
    c = Cluster(port, os.environ.get("CONFORMANCE_DIR", f"/tmp/fencing-conformance-{port}"))
    c.cluster_sh("stop")
    c.cluster_sh("start")
    results = {}
    n = failed = 0
    run_id = format(int(time.time() * 1000) % 36 ** 8, "x")
    global SAMPLER, STOP_PROBE
    SAMPLER = Sampler()
    SAMPLER.start()
    STOP_PROBE = Probe()
    started = time.monotonic()
    try:
        holder = [setup_run(c)]
        for name in names:
            log = open(os.path.join(LOGDIR, f"{name}.log"), "w")
            status, why = build(name, log)
            for case in cases:
                n += 1
                if status != "ok":
                    verdict = ("skip: " if status == "skip" else "FAIL: ") + why
                else:
                    log.write(f"==== {case}\n")
                    log.flush()
                    res = f"{name}-{case}-{run_id}"
                    a = None
                    try:
                        setup_case(holder[0], f"conformance_{run_id}_{name}_{case}")
                        a = Agent(name, c, log)
                        detail = CASES[case](a, holder if case in RESTARTS else holder[0], c, res)
                        verdict = "pass: " + detail
                    except CaseFail as e:
                        verdict = f"FAIL: {e}"
                    except Exception as e:  # a runner error is a failure of the case too
                        verdict = f"FAIL: runner error {type(e).__name__}: {e}"
                    finally:
                        if a is not None:
                            a.stop()
                        try:
                            holder[0].execute("SELECT 1")
                        except psycopg.Error:
                            c.wait_ready()
                            holder[0] = c.connect()
                bad = verdict.startswith("FAIL")
                failed += bad
                results.setdefault(name, {})[case] = verdict
                ok = "not ok" if bad else "ok"
                skip = " # SKIP" if verdict.startswith("skip") else ""
                print(f"{ok} {n} - {name} {case}: {verdict}{skip}", flush=True)
            log.close()
    finally:
        SAMPLER.done.set()
        c.cluster_sh("stop")
    print(f"1..{n}")
    worst = max((d for _, d in SAMPLER.probe.samples), default=0.0)
    print(f"# run time {time.monotonic() - started:.0f} s; worst scheduling delay measured {worst:.3f} s")
    print("\nconformance results (pass / FAIL / skip):")
    width = max(len(x) for x in cases)
    cols = [max(10, len(x) + 2) for x in names]
    print(" " * (width + 2) + "".join(f"{x:>{w}}" for x, w in zip(names, cols)))
    for case in cases:
        cells = [results.get(x, {}).get(case, "-").split(":")[0] for x in names]
        print(f"{case:<{width + 2}}" + "".join(f"{x:>{w}}" for x, w in zip(cells, cols)))
    with open(os.path.join(LOGDIR, "results.json"), "w") as f:
        json.dump(results, f, indent=1)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
