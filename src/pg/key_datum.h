// PostgreSQL values -> Picodata key encodings, shared by the SQL functions and the FDW.
#pragma once

extern "C" {
#include "postgres.h"
}

#include "core/bucket_hash.h"

#include <string>

namespace picoroute::pg {

// The types a sharding key value may have, as a hint for errors.
extern const char *const kSupportedKeyTypes;

// Appends one value of type `type` (a base type, not a domain) to `key`. An unsupported type
// raises SqlError 42804 naming it; NaN/infinite numerics and infinite timestamps are rejected.
// With `position` > 0 every error names the key part ("key part 2: ...").
void add_key_datum(KeyEncoder &key, Oid type, Datum value, bool isnull, int position = 0);

// format_type_be() as a std::string.
std::string type_name(Oid type);

}  // namespace picoroute::pg
