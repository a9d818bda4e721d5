// Included first by every header of src/core. The core library is plain C++17: it never sees a
// PostgreSQL header, so that it can be unit-tested without a server and so that no PostgreSQL
// longjmp can ever cross its destructors.
//
// Two walls: src/core is compiled with PICOROUTE_CORE defined and without PostgreSQL's include
// directories (Makefile and CMakeLists.txt), so a server header cannot even be found there; and
// should one arrive by another path, this check stops the build. The glue in src/pg includes core
// headers after postgres.h, which is allowed.
#pragma once

#if defined(PICOROUTE_CORE) && (defined(PG_VERSION_NUM) || defined(POSTGRES_H) || defined(C_H))
#error "src/core must not include PostgreSQL headers"
#endif
