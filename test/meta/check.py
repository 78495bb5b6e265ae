#!/usr/bin/python3
"""META.json against the PGXN Meta Spec 1.0.0, and one version number.

Prints "ok N - ..." / "not ok N - ..." lines.

* META.json: every required key (name, abstract, version, maintainer, license,
  provides, meta-spec) with the spec's types; semantic versions; provides
  entries with file and version (and the file exists); prereqs by phase and
  relation; resources, tags and no_index shapes when present.
* The version: fencing.control's default_version (the extension version, e.g.
  1.2) must equal META.json's version and provides.fencing.version (semantic
  version 1.2.0, the spec's form of 1.2), the upstream part of
  debian/changelog's top entry, and the README's "Current version:" line.
"""
import json
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..")
n = 0
failed = 0


def check(desc, cond, why=""):
    global n, failed
    n += 1
    if cond:
        print(f"ok {n} - {desc}")
    else:
        failed += 1
        print(f"not ok {n} - {desc}" + (f": {why}" if why else ""))


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+)?$")
LICENSES = {"agpl_3", "apache_1_1", "apache_2_0", "artistic_1", "artistic_2", "bsd",
            "freebsd", "gfdl_1_2", "gfdl_1_3", "gpl_1", "gpl_2", "gpl_3", "lgpl_2_1",
            "lgpl_3_0", "mit", "mozilla_1_0", "mozilla_1_1", "openssl", "perl_5",
            "postgresql", "qpl_1_0", "ssleay", "sun", "zlib", "open_source",
            "restricted", "unrestricted", "unknown"}
PHASES = {"configure", "build", "test", "runtime", "develop"}
RELATIONS = {"requires", "recommends", "suggests", "conflicts"}


def is_str(v):
    return isinstance(v, str) and v.strip() != ""


def is_str_or_list(v):
    return is_str(v) or (isinstance(v, list) and len(v) > 0 and all(is_str(x) for x in v))


def version_range_ok(v):
    # "0", a version, or comma-separated clauses like ">= 15.0.0, < 16.0.0"
    if v == 0 or v == "0":
        return True
    if not isinstance(v, str):
        return False
    for clause in v.split(","):
        m = re.fullmatch(r"\s*(?:(==|!=|>=|<=|>|<)\s*)?(\S+)\s*", clause)
        if not m or not SEMVER.match(m.group(2)):
            return False
    return True


try:
    meta = json.loads(read("META.json"))
    check("META.json is a JSON object", isinstance(meta, dict))
except (OSError, ValueError) as e:
    check("META.json parses", False, str(e))
    print(f"{n - failed} passed, {failed} failed")
    sys.exit(1)

for key in ("name", "abstract", "version", "maintainer", "license", "provides", "meta-spec"):
    check(f"META.json has required key {key}", key in meta)

check("name is fencing", meta.get("name") == "fencing", repr(meta.get("name")))
check("abstract is a non-empty string", is_str(meta.get("abstract")))
check("version is a semantic version", isinstance(meta.get("version"), str)
      and bool(SEMVER.match(meta.get("version", ""))), repr(meta.get("version")))
check("maintainer is a string or a list of strings", is_str_or_list(meta.get("maintainer")))
lic = meta.get("license")
check("license is a known spec license string, list or object",
      (isinstance(lic, str) and lic in LICENSES)
      or (isinstance(lic, list) and lic and all(x in LICENSES for x in lic))
      or (isinstance(lic, dict) and lic and all(is_str(v) for v in lic.values())), repr(lic))
ms = meta.get("meta-spec")
check("meta-spec.version is 1.0.0", isinstance(ms, dict) and ms.get("version") == "1.0.0", repr(ms))

prov = meta.get("provides")
check("provides is a non-empty object", isinstance(prov, dict) and len(prov) > 0)
prov = prov if isinstance(prov, dict) else {}
check("provides names the fencing extension", "fencing" in prov)
for ext, p in sorted(prov.items()):
    ok = isinstance(p, dict) and is_str(p.get("file")) and isinstance(p.get("version"), str) \
        and bool(SEMVER.match(p.get("version", "")))
    check(f"provides.{ext} has file and a semantic version", ok, repr(p))
    if ok:
        check(f"provides.{ext}.file exists", os.path.isfile(os.path.join(ROOT, p["file"])), p["file"])
        if "docfile" in p:
            check(f"provides.{ext}.docfile exists", os.path.isfile(os.path.join(ROOT, p["docfile"])),
                  p["docfile"])

if "prereqs" in meta:
    pr = meta["prereqs"]
    good = isinstance(pr, dict) and all(
        ph in PHASES and isinstance(rels, dict) and all(
            rel in RELATIONS and isinstance(mods, dict)
            and all(is_str(m) and version_range_ok(v) for m, v in mods.items())
            for rel, mods in rels.items())
        for ph, rels in pr.items())
    check("prereqs: phases, relations and version ranges are well formed", good, repr(pr))
    pg = pr.get("runtime", {}).get("requires", {}).get("PostgreSQL") if isinstance(pr, dict) else None
    check("prereqs.runtime.requires.PostgreSQL is 15", isinstance(pg, str) and pg.startswith("15."),
          repr(pg))
else:
    check("prereqs present", False)
if "resources" in meta:
    r = meta["resources"]
    check("resources is an object of strings/objects", isinstance(r, dict) and all(
        is_str(v) or isinstance(v, dict) for v in r.values()), repr(r))
if "tags" in meta:
    check("tags is a list of strings", isinstance(meta["tags"], list) and meta["tags"]
          and all(is_str(t) for t in meta["tags"]))
if "release_status" in meta:
    check("release_status is stable, testing or unstable",
          meta["release_status"] in ("stable", "testing", "unstable"))
if "no_index" in meta:
    ni = meta["no_index"]
    check("no_index has file/directory lists", isinstance(ni, dict) and all(
        k in ("file", "directory") and is_str_or_list(v) for k, v in ni.items()), repr(ni))

# One version number.
ctl = re.search(r"^default_version\s*=\s*'([^']+)'", read("fencing.control"), re.M)
check("fencing.control has a default_version", ctl is not None)
control_version = ctl.group(1) if ctl else None


def as_semver(v):  # the extension's "1.2" is the spec's "1.2.0"
    parts = v.split(".")
    while len(parts) < 3:
        parts.append("0")
    return ".".join(parts)


if control_version:
    want = as_semver(control_version)
    check(f"META.json version matches fencing.control ({control_version} = {want})",
          meta.get("version") == want, repr(meta.get("version")))
    check("META.json provides.fencing.version matches fencing.control",
          prov.get("fencing", {}).get("version") == want, repr(prov.get("fencing", {}).get("version")))
    top = read("debian/changelog").splitlines()[0]
    m = re.match(r"^fencing \(([^)]+)\) ", top)
    upstream = None
    if m:
        upstream = m.group(1).split(":", 1)[-1]
        upstream = upstream.rsplit("-", 1)[0] if "-" in upstream else upstream
    check("debian/changelog top entry's upstream version matches fencing.control",
          upstream == control_version, f"changelog {upstream!r}, control {control_version!r}")
    rm = re.findall(r"^Current version: \*\*([0-9][0-9.]*)\*\*", read("README.md"), re.M)
    check("README states the version once", len(rm) == 1, repr(rm))
    check("README's version matches fencing.control", rm[:1] == [control_version],
          f"README {rm!r}, control {control_version!r}")

print(f"{n - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
