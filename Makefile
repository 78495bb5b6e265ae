# fencing: PGXS build of a C++17 PostgreSQL extension.
#
#   make                 build fencing.so
#   make install         install into the pg_config found on PATH (or PG_CONFIG=...)
#   make installcheck    pg_regress + isolation specs against a running server, then
#                        the TAP suites (test/t, clusters of their own; TAP_TESTS= skips them)
#   make demo            the story, on a scratch cluster (installs only what it needs:
#                        test/install-deps.sh demo)
#   make test            every suite on a scratch cluster, ends with "N passed, N failed";
#                        SUITES="regress tap" (or regress,tap) runs only those, with
#                        their set-up (test/README.md maps the suites)
#   make deps            the Debian packages of every target (test/install-deps.sh)
#   make bench           instruction-count benchmark under callgrind, the bulk
#                        section (test/bench/bulk.sh), then bench-report
#   make bench-report    contention curves, scaling, memory check: bench/REPORT.md + plots
#   make bench-pgbench   wall-clock pgbench A/B, interleaved rounds
#   make bench-contention pgbench, 8 clients on one resource / one table vs plain
#   make check-starvation a raise gets through 8 writers at the HWM, timed
#   make bench-leases    lease acquire+release cycles/s and latency, against etcd
#   make stress          100k fenced writes with real pauses, on a scratch cluster (STRESS_WRITES=)
#   make fuzz            10^7 libFuzzer executions on the parser and decoder (FUZZ_RUNS=)
#   make examples        the client examples (examples/) on a scratch cluster
#   make matrix          PostgreSQL 15 and 18 built from source with assertions: every
#                        regress, isolation and TAP test on each, pg_upgrade 15 -> 18
#   make valgrind        pg_regress and isolation under Valgrind memcheck (PG_MAJOR=15|18)
#   make format          clang-format the sources

EXTENSION = fencing
MODULE_big = fencing
DATA = $(wildcard sql/fencing--*.sql)
PGFILEDESC = "fencing - fencing tokens enforced by PostgreSQL"

CORE_SRCS = $(wildcard src/core/*.cpp)
PG_SRCS = $(wildcard src/pg/*.cpp src/pg/*/*.cpp)
OBJS = $(CORE_SRCS:.cpp=.o) $(PG_SRCS:.cpp=.o)

REGRESS = $(patsubst sql/%.sql,%,$(filter-out sql/fencing--%,$(wildcard sql/*.sql)))
REGRESS_OPTS = --inputdir=. --load-extension=fencing
ISOLATION = $(patsubst test/isolation/specs/%.spec,%,$(wildcard test/isolation/specs/*.spec))
ISOLATION_OPTS = --inputdir=test/isolation --load-extension=fencing

# TAP suites on PostgreSQL::Test::Cluster (test/t/*.pl). PGXS runs them from
# installcheck with $(PROVE); test/t/run.sh is prove with what they need
# (PG_REGRESS, the bindir on PATH, prove run as the server user under root).
TAP_TESTS = 1
PROVE_TESTS = test/t/[0-9]*.pl

PG_CONFIG ?= pg_config

# PostgreSQL headers are included as system headers so that -Wextra -Werror
# judges our code, not theirs.
PG_INCLUDEDIR_SERVER := $(shell $(PG_CONFIG) --includedir-server)
PG_CPPFLAGS = -I$(srcdir)/src -isystem $(PG_INCLUDEDIR_SERVER)
# The library's version (PG_MODULE_MAGIC_EXT on 18+): the control file's.
FENCING_VERSION := $(shell sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" $(dir $(lastword $(MAKEFILE_LIST)))fencing.control)
PG_CPPFLAGS += -DFENCING_VERSION='"$(FENCING_VERSION)"'
# -Wshadow=compatible-local: PostgreSQL 16+ builds extensions with it.
PG_CXXFLAGS = -std=c++17 -fno-rtti -fno-exceptions -Wall -Wextra -Wshadow=compatible-local -Wno-missing-field-initializers $(WERROR)
PG_LDFLAGS = -lstdc++
# Header dependencies (PGXS tracks none without --enable-depend): a changed
# header rebuilds every object that includes it.
PG_CXXFLAGS += -MMD -MP
EXTRA_CLEAN = $(OBJS:.o=.d)
WERROR ?= -Werror

# LLVM bitcode for JIT inlining is switched off knowingly: the JIT can only
# inline SQL-callable functions of ours, and they are called from triggers and
# casts, never from a tight expression the JIT compiles; building bitcode would
# also need clang to accept the same C++ flags as g++.
override with_llvm = no

PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
-include $(OBJS:.o=.d)
PROVE = bash $(srcdir)/test/t/run.sh

.PHONY: matrix valgrind demo test tap bench bench-report bench-pgbench bench-contention check-starvation bench-leases format unit fuzz deps deps-demo examples stress
deps:
	bash test/install-deps.sh full
deps-demo:
	bash test/install-deps.sh demo
demo: deps-demo
	bash test/demo.sh
# The suite names are checked before anything is installed.
SUITES ?=
test:
	@bash test/run-all.sh --list $(SUITES)
	bash test/install-deps.sh full
	bash test/run-all.sh $(SUITES)
matrix:
	$(MAKE) test SUITES="pg15-assert pg18-assert upgrade-15-18"
PG_MAJOR ?= 15
valgrind:
	bash test/matrix/valgrind.sh $(PG_MAJOR)
# The TAP suites alone (installed extension, no running server needed).
tap:
	bash test/t/run.sh
bench: deps
	bash test/bench/run.sh
	bash test/bench/bulk.sh
	bash test/bench/report.sh
bench-report: deps
	bash test/bench/report.sh
bench-pgbench: deps
	bash test/bench/pgbench.sh
bench-contention: deps
	CLIENTS=8 ROUNDS=$${ROUNDS:-5} VARIANTS="plain resource1 table" bash test/bench/pgbench.sh
check-starvation:
	bash test/starvation/run.sh
bench-leases: deps
	bash test/bench/leases.sh
examples: deps
	bash test/examples.sh
# STRESS_WRITES fenced write attempts (default 10^5) with SIGSTOP pauses; 0 violations or it fails.
stress: deps
	STRESS_WRITES=$${STRESS_WRITES:-100000} bash test/stress/scratch.sh
unit:
	$(MAKE) -C test/unit
# FUZZ_RUNS executions (default 10^7) of the parser/decoder fuzzer, 0 crashes or it fails.
fuzz: deps
	$(MAKE) -C test/fuzz long
format:
	clang-format -i src/*/*.cpp src/*/*.hpp test/unit/*.cpp test/fuzz/*.cpp
