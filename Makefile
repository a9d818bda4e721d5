# picoroute: PGXS build of the extension. `make`, `make install`, `make installcheck`.
# The PostgreSQL-free core (src/core) is also built, with its unit tests, by CMakeLists.txt.

EXTENSION = picoroute
MODULE_big = picoroute
PGFILEDESC = "picoroute - bucket-aware routing to Picodata"

# Versioned SQL. Everything that makes up the extension's scripts lives in src/sql/:
#   src/sql/NN_<topic>.sql     the parts of the CURRENT version's install script, concatenated in
#                              sorted order into picoroute--$(EXTVERSION).sql (built, not committed);
#   src/sql/releases/          the install scripts of released versions, frozen as shipped (their
#                              checksums are in SHA256SUMS and checked on every build);
#   src/sql/updates/           the update scripts picoroute--FROM--TO.sql.
# The current version is default_version in picoroute.control. Contributors: every SQL object you
# add, change or drop goes BOTH into a part (src/sql/NN_<topic>.sql) AND into the update script to
# the current version (src/sql/updates/picoroute--<previous>--$(EXTVERSION).sql). The pg_regress
# suite `upgrade` fails when an updated installation differs from a fresh one. To release a
# version: freeze its built script into src/sql/releases/ (and add it to SHA256SUMS), raise
# default_version (and META.json, debian/changelog), and start the next update script.
# sql/ and expected/ hold the pg_regress suites only.
EXTVERSION := $(shell sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" picoroute.control)
SCRIPT_PARTS = $(sort $(wildcard src/sql/*.sql))
RELEASED_SCRIPTS = $(sort $(wildcard src/sql/releases/picoroute--*.sql))
UPDATE_SCRIPTS = $(sort $(wildcard src/sql/updates/picoroute--*--*.sql))
DATA_built = picoroute--$(EXTVERSION).sql
DATA = $(RELEASED_SCRIPTS) $(UPDATE_SCRIPTS)

CORE_SRCS := $(sort $(wildcard src/core/*.cpp) $(wildcard src/core/routing/*.cpp))
PG_SRCS := $(sort $(wildcard src/pg/*.cpp) $(wildcard src/pg/remote/*.cpp) $(wildcard src/pg/fdw/*.cpp) \
	$(wildcard src/pg/batch_join/*.cpp) $(wildcard src/pg/stats/*.cpp))
OBJS = $(CORE_SRCS:.cpp=.o) $(PG_SRCS:.cpp=.o)

# pg_regress suites, on a temporary instance that preloads the library (see test/regress.conf).
REGRESS = setup upgrade hashing topology_push errors privileges routing dialect live exec analyze upper runtime_params join_pushdown join route_checks monitoring
REGRESS_OUTDIR ?= .
REGRESS_OPTS = --temp-config=$(srcdir)/test/regress.conf --temp-instance=$(REGRESS_OUTDIR)/tmp_check \
	--outputdir=$(REGRESS_OUTDIR) --load-extension=picoroute

PG_CPPFLAGS = -I$(srcdir)/src -I$(shell $(PG_CONFIG) --includedir)
PG_CXXFLAGS = -std=c++17 -Wno-register -Wno-missing-field-initializers
SHLIB_LINK = -lpq -lstdc++

# No JIT bitcode: it would need clang and buys nothing for this library.
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# The core never sees PostgreSQL's include directories (the compile-time firewall).
src/core/%.o: src/core/%.cpp $(wildcard src/core/*.h) $(wildcard src/core/routing/*.h)
	$(CXX) $(CXXFLAGS) -DPICOROUTE_CORE -I$(srcdir)/src -c -o $@ $<

# Every header (coarse, but a changed struct never leaves a stale object behind).
$(PG_SRCS:.cpp=.o): $(wildcard src/core/*.h) $(wildcard src/core/routing/*.h) $(wildcard src/pg/*.h) $(wildcard src/pg/remote/*.h) \
	$(wildcard src/pg/fdw/*.h) $(wildcard src/pg/batch_join/*.h) $(wildcard src/pg/stats/*.h)

# The current version's install script. Refuses to build when a released script was edited, when
# the current version was already released, or when no update script leads to it.
picoroute--$(EXTVERSION).sql: $(SCRIPT_PARTS) $(RELEASED_SCRIPTS) $(UPDATE_SCRIPTS) src/sql/releases/SHA256SUMS picoroute.control
	@test -n "$(EXTVERSION)" || { echo "picoroute.control: no default_version" >&2; exit 1; }
	@cd src/sql/releases && sha256sum --quiet --strict -c SHA256SUMS || { \
	  echo "src/sql/releases: a released install script was changed; released scripts are frozen," >&2; \
	  echo "put the change into src/sql/ and the update script instead" >&2; exit 1; }
	@test ! -e src/sql/releases/$@ || { \
	  echo "$@ is already released (src/sql/releases): raise default_version in picoroute.control" >&2; exit 1; }
	@test -z "$(RELEASED_SCRIPTS)" || test -n "$(wildcard src/sql/updates/picoroute--*--$(EXTVERSION).sql)" || { \
	  echo "no update script to $(EXTVERSION): add src/sql/updates/picoroute--<previous>--$(EXTVERSION).sql" >&2; exit 1; }
	{ printf '%s\n\n' '\echo Use "CREATE EXTENSION picoroute" to load this file. \quit'; cat $(SCRIPT_PARTS); } > $@

# The source distribution (PGXN, and the Debian package's upstream tarball):
# picoroute-<version>.tar.gz from the committed tree (git archive HEAD), the version being
# META.json's (default_version with a patch level, checked by test/tools/pgxn_meta_check.py).
# DIST_DIR chooses where it is written.
DIST_VERSION = $(shell python3 -c 'import json; print(json.load(open("META.json"))["version"])')
DIST_DIR ?= .
.PHONY: dist
dist:
	@test -n "$(DIST_VERSION)" || { echo "META.json: no version" >&2; exit 1; }
	@python3 test/tools/pgxn_meta_check.py .
	@git rev-parse --git-dir >/dev/null 2>&1 || { echo "make dist needs a git checkout" >&2; exit 1; }
	@git diff --quiet HEAD -- || echo "make dist: uncommitted changes are not in the tarball (git archive HEAD)" >&2
	git archive --format=tar.gz --prefix=picoroute-$(DIST_VERSION)/ -o $(DIST_DIR)/picoroute-$(DIST_VERSION).tar.gz HEAD
	@echo "$(DIST_DIR)/picoroute-$(DIST_VERSION).tar.gz"
