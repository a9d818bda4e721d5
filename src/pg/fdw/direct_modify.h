// UPDATE and DELETE run remotely as one statement (direct_modify.cpp).
#pragma once

extern "C" {
#include "postgres.h"

#include "foreign/fdwapi.h"
}

namespace picoroute::pg::fdw {

// UPDATE and DELETE run remotely as one statement.
void install_direct_modify_callbacks(struct FdwRoutine *routine);

}  // namespace picoroute::pg::fdw
