# picoroute: PGXS build of the extension. `make`, `make install`, `make installcheck`.
# The PostgreSQL-free core (src/core) is also built, with its unit tests, by CMakeLists.txt.

EXTENSION = picoroute
MODULE_big = picoroute
# The install script is assembled from its parts: the topology surface, then routing and the FDW.
DATA_built = picoroute--0.1.sql
SCRIPT_PARTS = sql/picoroute--0.1.sql $(sort $(wildcard src/sql/*.sql))
PGFILEDESC = "picoroute - bucket-aware routing to Picodata"

CORE_SRCS := $(sort $(wildcard src/core/*.cpp))
PG_SRCS := $(sort $(wildcard src/pg/*.cpp) $(wildcard src/pg/fdw/*.cpp))
OBJS = $(CORE_SRCS:.cpp=.o) $(PG_SRCS:.cpp=.o)

# pg_regress suites, on a temporary instance that preloads the library (see test/regress.conf).
REGRESS = setup hashing topology_push errors privileges routing
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
src/core/%.o: src/core/%.cpp $(wildcard src/core/*.h)
	$(CXX) $(CXXFLAGS) -DPICOROUTE_CORE -I$(srcdir)/src -c -o $@ $<

$(PG_SRCS:.cpp=.o): $(wildcard src/core/*.h) $(wildcard src/pg/*.h)

picoroute--0.1.sql: $(SCRIPT_PARTS)
	cat $^ > $@
