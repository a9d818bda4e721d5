// picoroute_bucket_id(tier, VARIADIC key "any"), picoroute_bucket_id_with_count(bucket_count,
// VARIADIC key "any") and picoroute_bucket_id_for_version(version, bucket_count, VARIADIC key
// "any"): Picodata's bucket id of a sharding key, computed from PostgreSQL values by the hashing
// rule of a Picodata release line (core/bucket_hash.h): the cluster's detected version's, 25.5's,
// or the named version's.
//
// How each value type is hashed: see key_datum.cpp (the one table of key types). Domains hash as
// their base type.
extern "C" {
#include "postgres.h"

#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/lsyscache.h"
}

#include "core/capabilities.h"
#include "core/bucket_hash.h"
#include "core/errors.h"
#include "pg/guard.h"
#include "pg/key_datum.h"
#include "pg/map_store.h"
#include "pg/sql_common.h"

#include <optional>
#include <string>

namespace picoroute::pg {

namespace {

// The type a value hashes as: domains are looked through.
Oid key_type(Oid type) {
    if (find_key_type(type) != nullptr)
        return type;
    Oid base = InvalidOid;
    pg_call([&] { base = getBaseType(type); });
    return base;
}

Oid argument_type(FunctionCallInfo fcinfo, int argno) {
    Oid type = get_fn_expr_argtype(fcinfo->flinfo, argno);
    if (!OidIsValid(type))
        throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE,
                       "picoroute: could not determine the data type of key argument " +
                           std::to_string(argno + 1),
                       {}, "Call the function from SQL so the argument types are known.");
    return type;
}

// The bucket count argument `argno` (not NULL); ERROR 22023 unless it is at least 1.
uint32_t bucket_count_arg(FunctionCallInfo fcinfo, int argno) {
    int32 bucket_count = PG_GETARG_INT32(argno);
    if (bucket_count < 1)
        throw SqlError(
            ERRCODE_INVALID_PARAMETER_VALUE,
            "picoroute: bucket_count must be at least 1, not " + std::to_string(bucket_count), {},
            "Use the tier's bucket_count (Picodata's default is 3000).");
    return static_cast<uint32_t>(bucket_count);
}

// The hashing rule of the Picodata version named by text argument `argno` (not NULL); ERROR 22023
// for a text that is no version.
HashRule version_rule_arg(FunctionCallInfo fcinfo, int argno) {
    std::string version(text_arg(fcinfo, argno));
    if (!caps::parse_version(version))
        throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE,
                       "picoroute: \"" + version + "\" is not a Picodata version", {},
                       "Give the version as Picodata reports it, such as 25.5.10 or 26.1.6 "
                       "(picoroute_status.picodata_version).");
    return hash_rule_for(caps::CapabilitySet(version));
}

}  // namespace

HashRule cluster_hash_rule(const SnapshotView &view) {
    std::optional<std::string> version = view.cluster_version();
    return hash_rule_for(version ? caps::CapabilitySet(*version) : caps::CapabilitySet());
}

uint32_t hash_key_arguments(FunctionCallInfo fcinfo, int first_argno, uint32_t bucket_count,
                            bool *key_is_null, HashRule rule) {
    *key_is_null = false;
    KeyHasher key(rule);
    if (get_fn_expr_variadic(fcinfo->flinfo)) {
        // VARIADIC ARRAY[...]: the key parts are the array's elements.
        if (PG_ARGISNULL(first_argno)) {
            *key_is_null = true;
            return 0;
        }
        Oid array_type = argument_type(fcinfo, first_argno);
        Oid element_type = InvalidOid;
        pg_call([&] { element_type = get_base_element_type(array_type); });
        if (!OidIsValid(element_type))
            throw SqlError(ERRCODE_DATATYPE_MISMATCH,
                           "picoroute: a VARIADIC key argument must be an array, not " +
                               type_name(array_type));
        Oid type = key_type(element_type);
        Datum *elements = nullptr;
        bool *nulls = nullptr;
        int count = 0;
        pg_call([&] {
            ArrayType *array = PG_GETARG_ARRAYTYPE_P(first_argno);
            int16 typlen;
            bool typbyval;
            char typalign;
            get_typlenbyvalalign(ARR_ELEMTYPE(array), &typlen, &typbyval, &typalign);
            deconstruct_array(array, ARR_ELEMTYPE(array), typlen, typbyval, typalign, &elements,
                              &nulls, &count);
        });
        if (count == 0)
            throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE,
                           "picoroute: a sharding key needs at least one value", {},
                           "The VARIADIC array is empty.");
        for (int i = 0; i < count; i++)
            key.add(type, elements[i], nulls[i], i + 1);
    } else {
        for (int argno = first_argno; argno < PG_NARGS(); argno++) {
            Oid type = key_type(argument_type(fcinfo, argno));
            key.add(type, PG_GETARG_DATUM(argno), PG_ARGISNULL(argno), argno - first_argno + 1);
        }
    }
    return key.bucket(bucket_count);
}

}  // namespace picoroute::pg

using namespace picoroute::pg;
using picoroute::HashRule;

// Both return NULL for a NULL first argument or a key that is one NULL array.
PICOROUTE_SQL_FUNCTION(picoroute_bucket_id) {
    if (PG_ARGISNULL(0))
        PG_RETURN_NULL();
    MapRef map = current_map();
    int32_t tier = require_tier(*map.view, map.generation, text_arg(fcinfo, 0));
    uint32_t bucket_count = require_bucket_count(*map.view, tier);
    bool key_is_null = false;
    uint32_t bucket =
        hash_key_arguments(fcinfo, 1, bucket_count, &key_is_null, cluster_hash_rule(*map.view));
    if (key_is_null)
        PG_RETURN_NULL();
    PG_RETURN_INT32(static_cast<int32>(bucket));
}

// IMMUTABLE: needs no topology, so it cannot follow the cluster's version; it hashes by 25.5's
// rule, which it always had (an expression index or a stored column computed with it stays valid).
PICOROUTE_SQL_FUNCTION(picoroute_bucket_id_with_count) {
    if (PG_ARGISNULL(0))
        PG_RETURN_NULL();
    uint32_t bucket_count = bucket_count_arg(fcinfo, 0);
    bool key_is_null = false;
    uint32_t bucket =
        hash_key_arguments(fcinfo, 1, bucket_count, &key_is_null, HashRule::Picodata25_5);
    if (key_is_null)
        PG_RETURN_NULL();
    PG_RETURN_INT32(static_cast<int32>(bucket));
}

// IMMUTABLE too: the rule is that of the version named (as Picodata reports it, e.g. "26.1.6").
PICOROUTE_SQL_FUNCTION(picoroute_bucket_id_for_version) {
    if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
        PG_RETURN_NULL();
    HashRule rule = version_rule_arg(fcinfo, 0);
    uint32_t bucket_count = bucket_count_arg(fcinfo, 1);
    bool key_is_null = false;
    uint32_t bucket = hash_key_arguments(fcinfo, 2, bucket_count, &key_is_null, rule);
    if (key_is_null)
        PG_RETURN_NULL();
    PG_RETURN_INT32(static_cast<int32>(bucket));
}
