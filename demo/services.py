"""Scratch lock services for the demo and the end-to-end tests: etcd and
ZooKeeper from Debian's packages, each on loopback, on free private ports, with
a data directory under /tmp that is removed on stop. Every wait is bounded.

    with Etcd() as etcd: ... etcd.endpoint            # "127.0.0.1:PORT"
    with ZooKeeper() as zk: ... zk.hosts; zk.restart()
"""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise TimeoutError(f"{what}: not within {seconds} s")


class Service:
    name = "service"

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix=f"fencing-{self.name}-", dir="/tmp")
        self.proc = None
        self.log = os.path.join(self.dir, "server.log")

    def _spawn(self, argv, env=None):
        with open(self.log, "ab") as log:
            # A process group of its own: a terminal's ^C goes to the demo,
            # which then stops the service itself.
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         cwd=self.dir, env=env, start_new_session=True)

    def _ready(self):
        raise NotImplementedError

    def _wait_ready(self, seconds):
        def up():
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode}; log:\n" + self.log_tail())
            return self._ready()
        wait_until(up, seconds, f"{self.name} ready")

    def log_tail(self, lines=30):
        try:
            with open(self.log, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def kill(self):
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        self.proc = None

    def stop(self):
        self.kill()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()


def _port_open(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class Etcd(Service):
    """A one-member etcd (Debian's etcd-server, /usr/bin/etcd)."""
    name = "etcd"

    def start(self):
        self.port, peer = free_port(), free_port()
        self.endpoint = f"127.0.0.1:{self.port}"
        client, peer_url = f"http://127.0.0.1:{self.port}", f"http://127.0.0.1:{peer}"
        self._spawn(["/usr/bin/etcd", "--name", "fencing", "--data-dir", os.path.join(self.dir, "data"),
                     "--listen-client-urls", client, "--advertise-client-urls", client,
                     "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
                     "--initial-cluster", f"fencing={peer_url}", "--initial-cluster-state", "new"])
        self._wait_ready(30)

    def _ready(self):
        try:
            import etcd3
            etcd3.client(host="127.0.0.1", port=self.port, timeout=1).status()
            return True
        except Exception:
            return False


class ZooKeeper(Service):
    """A one-server ZooKeeper ensemble (Debian's zookeeper, run by java from
    /usr/share/java/zookeeper.jar). It runs in quorum mode (standaloneEnabled =
    false), so each restart elects a leader in a new epoch: zxids then read
    epoch<<32 | counter with a higher epoch and a counter that starts again."""
    name = "zookeeper"

    def start(self):
        self.port, quorum, election = free_port(), free_port(), free_port()
        self.hosts = f"127.0.0.1:{self.port}"
        data = os.path.join(self.dir, "data")
        os.makedirs(data)
        with open(os.path.join(data, "myid"), "w") as f:
            f.write("1\n")
        self.cfg = os.path.join(self.dir, "zoo.cfg")
        with open(self.cfg, "w") as f:
            f.write(f"""tickTime=500
initLimit=10
syncLimit=5
dataDir={data}
clientPort={self.port}
clientPortAddress=127.0.0.1
standaloneEnabled=false
admin.enableServer=false
minSessionTimeout=1000
maxSessionTimeout=20000
4lw.commands.whitelist=srvr
server.1=127.0.0.1:{quorum}:{election};127.0.0.1:{self.port}
""")
        self._launch()

    def _launch(self):
        env = dict(os.environ, JAVA_TOOL_OPTIONS="-Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1")
        self._spawn(["java", "-cp", "/usr/share/java/zookeeper.jar:/etc/zookeeper/conf",
                     "-Dzookeeper.jmx.log4j.disable=true",
                     "org.apache.zookeeper.server.quorum.QuorumPeerMain", self.cfg], env=env)
        self._wait_ready(60)

    def _ready(self):
        if not _port_open(self.port):
            return False
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"srvr")
                reply = s.recv(4096).decode(errors="replace")
            return "Mode: leader" in reply or "Mode: standalone" in reply
        except OSError:
            return False

    def restart(self):
        """Stops the server (its data stays) and starts it again: a new epoch."""
        self.kill()
        wait_until(lambda: not _port_open(self.port), 10, "zookeeper port released")
        self._launch()
