#!/usr/bin/env bash
# make bench-report (and the second half of make bench): the benchmark report.
#
#   1. the instruction counts of test/bench/run.sh (make bench runs it first;
#      here its latest test/bench/results.txt and hotspots.txt are taken, or
#      it is run if there are none) -> bench/data/callgrind.txt, hotspots.txt
#   2. contention curves, 1-16 clients      -> bench/data/contention.tsv
#   3. scaling with 1k-10M HWMs/tombstones  -> bench/data/scaling.tsv, scaling-profile.txt
#   4. memory over 1M fenced_update() calls and 1M transparent-mode
#      transactions, a check: "ok" / "not ok" -> bench/data/memory.tsv
#   5. bench/REPORT.md and the plots (test/bench/report.py, gnuplot)
#
# About 35 minutes on the 2-core machine (10M HWMs take the longest). Knobs:
# REPORT_STEPS ("callgrind contention scaling memory"; the report is always
# written from what bench/data holds), MEMORY_CALLS (1000000), SCALES,
# CLIENT_COUNTS, ROUNDS, SECONDS_PER_RUN; ports CONTENTION_PGPORT (54395),
# SCALING_PGPORT (54396), MEMORY_PGPORT (54397). Exits non-zero if a step
# failed or the memory check did not pass.
set -euo pipefail
cd "$(dirname "$0")/../.."
STEPS=${REPORT_STEPS:-callgrind contention scaling memory}
mkdir -p bench/data
status=0
step() { [[ " $STEPS " == *" $1 "* ]]; }

if step callgrind; then
    echo "== instructions per write (test/bench/run.sh)"
    [ -f test/bench/results.txt ] || bash test/bench/run.sh
    cp test/bench/results.txt bench/data/callgrind.txt
    [ -f test/bench/hotspots.txt ] && cp test/bench/hotspots.txt bench/data/hotspots.txt
fi
if step contention; then
    echo "== contention curves (test/bench/contention.sh)"
    bash test/bench/contention.sh || status=1
fi
if step scaling; then
    echo "== scaling (test/bench/scaling.sh)"
    bash test/bench/scaling.sh || status=1
fi
if step memory; then
    echo "== memory (test/bench/memory.sh)"
    export FENCING_PGPORT=${MEMORY_PGPORT:-54397}
    export FENCING_CLUSTER_DIR=/tmp/fencing-memory-$FENCING_PGPORT
    SUDO=
    [ "$(id -u)" = 0 ] || SUDO=sudo
    make -s >/dev/null && $SUDO make -s install >/dev/null
    test/cluster.sh stop
    trap 'test/cluster.sh stop' EXIT
    test/cluster.sh start
    (
        eval "$(test/cluster.sh env)"
        CALLS=${MEMORY_CALLS:-1000000} OUT=bench/data/memory.tsv bash test/bench/memory.sh
    ) || status=1
    test/cluster.sh stop
fi
echo "== bench/REPORT.md"
/usr/bin/python3 test/bench/report.py || status=1
exit $status
