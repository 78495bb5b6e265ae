#!/usr/bin/python3
"""with_service.py SERVICE -- COMMAND...: runs COMMAND with a scratch etcd
(ETCD_ENDPOINT=host:port) or ZooKeeper (ZK_HOSTS=host:port) from
demo/services.py on loopback, stopped afterwards; exits with COMMAND's status."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "demo"))
import services  # noqa: E402

kind, cmd = sys.argv[1], sys.argv[3:]
if kind == "etcd":
    with services.Etcd() as etcd:
        rc = subprocess.call(cmd, env=dict(os.environ, ETCD_ENDPOINT=etcd.endpoint))
elif kind == "zookeeper":
    with services.ZooKeeper() as zk:
        rc = subprocess.call(cmd, env=dict(os.environ, ZK_HOSTS=zk.hosts))
else:
    sys.exit(f"unknown service {kind}")
sys.exit(rc)
