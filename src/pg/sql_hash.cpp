// picoroute_bucket_id(tier, VARIADIC key "any") and picoroute_bucket_id_with_count(bucket_count,
// VARIADIC key "any"): Picodata's bucket id of a sharding key, computed from PostgreSQL values.
//
// Value types and how each is hashed (facts, section 3):
//   smallint, integer, bigint           -> integer (most compact MessagePack form)
//   text, varchar, name, unknown literal -> text (raw UTF-8 bytes)
//   character(n) (bpchar)               -> text with trailing blanks removed, as PostgreSQL
//                                          compares it ('ab  '::char(4) hashes like 'ab')
//   boolean                             -> boolean
//   real, double precision              -> double (a real is widened exactly)
//   numeric                             -> decimal of its text form, scale kept (1.0 <> 1);
//                                          NaN and infinities are rejected
//   uuid                                -> uuid
//   timestamp with time zone            -> datetime: seconds since 1970 and nanoseconds, UTC;
//                                          infinities are rejected
//   NULL                                -> nil
// Domains over these types hash as their base type. Anything else is an error naming the type.
extern "C" {
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/lsyscache.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"

PG_FUNCTION_INFO_V1(picoroute_bucket_id);
PG_FUNCTION_INFO_V1(picoroute_bucket_id_with_count);
}

#include "core/bucket_hash.h"
#include "core/errors.h"
#include "pg/guard.h"
#include "pg/map_store.h"
#include "pg/sql_common.h"

#include <array>
#include <cstring>
#include <string>

namespace picoroute::pg {

namespace {

constexpr const char *kSupportedTypes =
    "Supported key types: smallint, integer, bigint, text, varchar, character, name, boolean, "
    "real, double precision, numeric, uuid, timestamp with time zone.";

// Seconds between 1970-01-01 (Picodata's datetime epoch) and 2000-01-01 (PostgreSQL's).
constexpr int64_t kPostgresEpochInUnixSeconds =
    static_cast<int64_t>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY;

std::string type_name(Oid type) {
    std::string name;
    pg_call([&] { name = format_type_be(type); });
    return name;
}

std::string_view varlena_bytes(Datum value) {
    text *detoasted = nullptr;
    pg_call([&] { detoasted = reinterpret_cast<text *>(PG_DETOAST_DATUM_PACKED(value)); });
    return std::string_view(VARDATA_ANY(detoasted), VARSIZE_ANY_EXHDR(detoasted));
}

void add_numeric(KeyEncoder &key, Datum value) {
    bool nan = false, infinite = false;
    char *text = nullptr;
    pg_call([&] {
        Numeric number = DatumGetNumeric(value);
        nan = numeric_is_nan(number);
        infinite = numeric_is_inf(number);
        if (!nan && !infinite)
            text = DatumGetCString(DirectFunctionCall1(numeric_out, value));
    });
    if (nan || infinite)
        throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE,
                       std::string("picoroute: cannot hash numeric ") + (nan ? "NaN" : "infinity") +
                           " as a Picodata decimal",
                       {}, "Picodata decimals are finite numbers.");
    key.add_decimal(text);
}

void add_timestamptz(KeyEncoder &key, TimestampTz value) {
    if (TIMESTAMP_NOT_FINITE(value))
        throw SqlError(ERRCODE_DATETIME_VALUE_OUT_OF_RANGE,
                       "picoroute: cannot hash an infinite timestamp as a Picodata datetime", {},
                       "Picodata datetimes are finite.");
    // Floor division, so that a moment before 2000 keeps a non-negative sub-second part.
    int64_t seconds = value / USECS_PER_SEC;
    int64_t micros = value % USECS_PER_SEC;
    if (micros < 0) {
        seconds -= 1;
        micros += USECS_PER_SEC;
    }
    key.add_datetime(seconds + kPostgresEpochInUnixSeconds, static_cast<int32_t>(micros * 1000));
}

// Appends one key value of type `type` (already resolved to its base type).
void add_value_unchecked(KeyEncoder &key, Oid type, Datum value, bool isnull, int position) {
    if (isnull) {
        key.add_null();
        return;
    }
    switch (type) {
        case INT2OID:
            key.add_int(DatumGetInt16(value));
            return;
        case INT4OID:
            key.add_int(DatumGetInt32(value));
            return;
        case INT8OID:
            key.add_int(DatumGetInt64(value));
            return;
        case TEXTOID:
        case VARCHAROID:
            key.add_text(varlena_bytes(value));
            return;
        case BPCHAROID: {
            std::string_view text = varlena_bytes(value);
            while (!text.empty() && text.back() == ' ')
                text.remove_suffix(1);
            key.add_text(text);
            return;
        }
        case NAMEOID:
            key.add_text(NameStr(*DatumGetName(value)));
            return;
        case UNKNOWNOID:
            key.add_text(DatumGetCString(value));
            return;
        case BOOLOID:
            key.add_bool(DatumGetBool(value));
            return;
        case FLOAT4OID:
            key.add_double(static_cast<double>(DatumGetFloat4(value)));
            return;
        case FLOAT8OID:
            key.add_double(DatumGetFloat8(value));
            return;
        case NUMERICOID:
            add_numeric(key, value);
            return;
        case UUIDOID: {
            std::array<uint8_t, 16> bytes;
            std::memcpy(bytes.data(), DatumGetUUIDP(value)->data, bytes.size());
            key.add_uuid(bytes);
            return;
        }
        case TIMESTAMPTZOID:
            add_timestamptz(key, DatumGetTimestampTz(value));
            return;
        default:
            throw SqlError(ERRCODE_DATATYPE_MISMATCH,
                           "picoroute: cannot hash a sharding key value of type " +
                               type_name(type) + " (key part " + std::to_string(position) + ")",
                           {}, kSupportedTypes);
    }
}

// The same, with the core library's errors (e.g. a decimal beyond 38 digits) naming the key part.
void add_value(KeyEncoder &key, Oid type, Datum value, bool isnull, int position) {
    try {
        add_value_unchecked(key, type, value, isnull, position);
    } catch (const Error &e) {
        throw Error(e.kind(), "picoroute: key part " + std::to_string(position) + ": " + e.what(),
                    e.hint());
    }
}

bool is_builtin_key_type(Oid type) {
    switch (type) {
        case INT2OID:
        case INT4OID:
        case INT8OID:
        case TEXTOID:
        case VARCHAROID:
        case BPCHAROID:
        case NAMEOID:
        case UNKNOWNOID:
        case BOOLOID:
        case FLOAT4OID:
        case FLOAT8OID:
        case NUMERICOID:
        case UUIDOID:
        case TIMESTAMPTZOID:
            return true;
        default:
            return false;
    }
}

// The type a value hashes as: domains are looked through.
Oid key_type(Oid type) {
    if (is_builtin_key_type(type))
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

}  // namespace

uint32_t hash_key_arguments(FunctionCallInfo fcinfo, int first_argno, uint32_t bucket_count,
                            bool *key_is_null) {
    *key_is_null = false;
    KeyEncoder key;
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
            add_value(key, type, elements[i], nulls[i], i + 1);
    } else {
        for (int argno = first_argno; argno < PG_NARGS(); argno++) {
            Oid type = key_type(argument_type(fcinfo, argno));
            add_value(key, type, PG_GETARG_DATUM(argno), PG_ARGISNULL(argno),
                      argno - first_argno + 1);
        }
    }
    return bucket_id_for_bytes(key.bytes(), bucket_count);
}

}  // namespace picoroute::pg

using namespace picoroute::pg;

extern "C" Datum picoroute_bucket_id(PG_FUNCTION_ARGS) {
    require_preloaded();
    if (PG_ARGISNULL(0))
        PG_RETURN_NULL();
    bool key_is_null = false;
    uint32_t bucket = guarded([&] {
        MapRef map = current_map();
        int32_t tier = require_tier(*map.view, map.generation, text_arg(fcinfo, 0));
        uint32_t bucket_count = require_bucket_count(*map.view, tier);
        return hash_key_arguments(fcinfo, 1, bucket_count, &key_is_null);
    });
    if (key_is_null)
        PG_RETURN_NULL();
    PG_RETURN_INT32(static_cast<int32>(bucket));
}

extern "C" Datum picoroute_bucket_id_with_count(PG_FUNCTION_ARGS) {
    require_preloaded();
    if (PG_ARGISNULL(0))
        PG_RETURN_NULL();
    int32 bucket_count = PG_GETARG_INT32(0);
    if (bucket_count < 1)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE),
                        errmsg("picoroute: bucket_count must be at least 1, not %d", bucket_count),
                        errhint("Use the tier's bucket_count (Picodata's default is 3000).")));
    bool key_is_null = false;
    uint32_t bucket = guarded([&] {
        return hash_key_arguments(fcinfo, 1, static_cast<uint32_t>(bucket_count), &key_is_null);
    });
    if (key_is_null)
        PG_RETURN_NULL();
    PG_RETURN_INT32(static_cast<int32>(bucket));
}
