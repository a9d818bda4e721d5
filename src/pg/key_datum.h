// The PostgreSQL types Picodata knows, in one table keyed by type OID: how a value of each becomes
// a sharding key value (core/bucket_hash.h), the Picodata column type it hashes as, and whether
// Picodata holds and compares its values alike. Shared by the bucket-id SQL functions and the FDW
// (routing, declaration checks, IMPORT FOREIGN SCHEMA, pushdown), so they all agree.
#pragma once

extern "C" {
#include "postgres.h"
}

#include "core/bucket_hash.h"

#include <string>
#include <string_view>

namespace picoroute::pg {

// The Picodata value a sharding key value becomes; None: it cannot be hashed.
enum class HashClass { None, Int, Text, Bool, Double, Decimal, Uuid, Datetime };

struct KeyType {
    Oid oid;
    // As the hint of an unsupported key type names it; nullptr: not listed.
    const char *sql_name;
    // None only for the `unknown` literal type: it hashes (an untyped literal given to a SQL
    // function), but no column has it, so no routing decision can match it.
    HashClass hash_class;
    // The Picodata column type it hashes as, and whether it is the one PostgreSQL type that holds
    // every value of that Picodata type (what IMPORT FOREIGN SCHEMA declares).
    const char *picodata_type;
    bool canonical;
    // Picodata holds and compares its values as PostgreSQL does, so expressions on it may be sent
    // (a real is not: Picodata has doubles only, and comparing a widened real differs).
    bool shippable;
    // Appends a non-NULL value; PostgreSQL calls go through pg_call, errors are SqlError.
    void (*add)(KeyEncoder &key, Datum value);
};

// The table's entry of `type` (a base type, not a domain); nullptr when it cannot be hashed.
const KeyType *find_key_type(Oid type);
// find_key_type(type)->hash_class, None for types not in the table.
HashClass hash_class(Oid type);
// The canonical entry of a Picodata column type ("integer", "unsigned", "string", "bool", ...);
// nullptr for a type that cannot be a sharding key (any, map, array, unknown names).
const KeyType *key_type_for_picodata(std::string_view picodata_type);

// Types an expression sent to Picodata may have (KeyType::shippable), and two families of them.
bool shippable_type(Oid type);
bool is_text_type(Oid type);    // text, varchar
bool is_number_type(Oid type);  // smallint, integer, bigint, double precision, numeric

// Appends one value of type `type` (a base type, not a domain) to `key`. An unsupported type
// raises SqlError 42804 naming it, with a hint listing the supported ones; NaN/infinite numerics
// and infinite timestamps are rejected. With `position` > 0 every error names the key part
// ("key part 2: ...").
void add_key_datum(KeyEncoder &key, Oid type, Datum value, bool isnull, int position = 0);

// Key -> bucket, the one place on the PostgreSQL side that does it (the bucket-id SQL functions,
// the routing of scans and direct modifications, the grouping of inserted rows): a sharding key
// is hashed part by part in hashing order, as Picodata does, then reduced to a bucket id.
class KeyHasher {
  public:
    // `rule`: the hashing rule of the cluster's release line (core/bucket_hash.h).
    explicit KeyHasher(HashRule rule) : key_(rule) {}
    // Appends one part; errors as add_key_datum (a `position` > 0 names the part in them).
    void add(Oid type, Datum value, bool isnull, int position = 0) {
        add_key_datum(key_, type, value, isnull, position);
    }
    // The bucket (1..bucket_count) of the key made of the parts added so far.
    uint32_t bucket(uint32_t bucket_count) const;

  private:
    KeyEncoder key_;
};

// The bucket of a key whose `nparts` parts are given as arrays in hashing order.
uint32_t key_bucket(int nparts, const Oid *types, const Datum *values, const bool *nulls,
                    uint32_t bucket_count, HashRule rule);

// format_type_be() as a std::string.
std::string type_name(Oid type);

}  // namespace picoroute::pg
