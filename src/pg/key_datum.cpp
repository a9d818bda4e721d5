// The table of PostgreSQL types Picodata knows (key_datum.h) and the encoding of their values as
// Picodata key values (core/bucket_hash.h). Shared by the bucket-id SQL functions and the FDW, so
// both hash exactly alike.
//
// Value types and how each is hashed (facts, section 3):
//   smallint, integer, bigint           -> integer (most compact MessagePack form)
//   text, varchar, name, unknown literal -> text (raw UTF-8 bytes)
//   character(n) (bpchar)               -> text with trailing blanks removed, as PostgreSQL
//                                          compares it ('ab  '::char(4) hashes like 'ab')
//   boolean                             -> boolean
//   real, double precision              -> double (a real is widened exactly), by the KeyEncoder's
//                                          HashRule (25.5: cb + IEEE 754; 26.1+: an integral
//                                          one as integer, any other without the cb header)
//   numeric                             -> decimal of its text form, scale kept (1.0 <> 1);
//                                          NaN and infinities are rejected
//   uuid                                -> uuid
//   timestamp with time zone            -> datetime: seconds since 1970 and nanoseconds, UTC;
//                                          infinities are rejected
//   NULL                                -> nil
extern "C" {
#include "postgres.h"

#include "catalog/pg_type.h"
#include "fmgr.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/numeric.h"
#include "utils/timestamp.h"
#include "utils/uuid.h"
}

#include "core/errors.h"
#include "pg/guard.h"
#include "pg/key_datum.h"

#include <array>
#include <cstring>
#include <string>
#include <utility>

namespace picoroute::pg {

namespace {

// Seconds between 1970-01-01 (Picodata's datetime epoch) and 2000-01-01 (PostgreSQL's).
constexpr int64_t kPostgresEpochInUnixSeconds =
    static_cast<int64_t>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY;

}  // namespace

std::string type_name(Oid type) {
    // Only plain data inside pg_call: an exception must not leave PG_TRY's frame behind.
    char *name = nullptr;
    pg_call([&] { name = format_type_be(type); });
    return std::string(name);
}

namespace {

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

void add_timestamptz(KeyEncoder &key, Datum datum) {
    TimestampTz value = DatumGetTimestampTz(datum);
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

// One function per table entry: the value as Picodata encodes it.
void add_int2(KeyEncoder &key, Datum value) {
    key.add_int(DatumGetInt16(value));
}
void add_int4(KeyEncoder &key, Datum value) {
    key.add_int(DatumGetInt32(value));
}
void add_int8(KeyEncoder &key, Datum value) {
    key.add_int(DatumGetInt64(value));
}
void add_text(KeyEncoder &key, Datum value) {
    key.add_text(varlena_bytes(value));
}
void add_bpchar(KeyEncoder &key, Datum value) {
    std::string_view text = varlena_bytes(value);
    while (!text.empty() && text.back() == ' ')
        text.remove_suffix(1);
    key.add_text(text);
}
void add_name(KeyEncoder &key, Datum value) {
    key.add_text(NameStr(*DatumGetName(value)));
}
void add_unknown(KeyEncoder &key, Datum value) {
    key.add_text(DatumGetCString(value));
}
void add_bool(KeyEncoder &key, Datum value) {
    key.add_bool(DatumGetBool(value));
}
void add_float4(KeyEncoder &key, Datum value) {
    key.add_double(static_cast<double>(DatumGetFloat4(value)));
}
void add_float8(KeyEncoder &key, Datum value) {
    key.add_double(DatumGetFloat8(value));
}
void add_uuid(KeyEncoder &key, Datum value) {
    std::array<uint8_t, 16> bytes;
    std::memcpy(bytes.data(), DatumGetUUIDP(value)->data, bytes.size());
    key.add_uuid(bytes);
}

// In the order the hint lists them.
// clang-format off
const KeyType kKeyTypes[] = {
    // oid           sql_name                    hash_class           picodata    canonical shippable
    {INT2OID,        "smallint",                 HashClass::Int,      "integer",  false, true,  add_int2},
    {INT4OID,        "integer",                  HashClass::Int,      "integer",  false, true,  add_int4},
    {INT8OID,        "bigint",                   HashClass::Int,      "integer",  true,  true,  add_int8},
    {TEXTOID,        "text",                     HashClass::Text,     "string",   true,  true,  add_text},
    {VARCHAROID,     "varchar",                  HashClass::Text,     "string",   false, true,  add_text},
    {BPCHAROID,      "character",                HashClass::Text,     "string",   false, true,  add_bpchar},
    {NAMEOID,        "name",                     HashClass::Text,     "string",   false, true,  add_name},
    {UNKNOWNOID,     nullptr,                    HashClass::None,     "string",   false, false, add_unknown},
    {BOOLOID,        "boolean",                  HashClass::Bool,     "boolean",  true,  true,  add_bool},
    {FLOAT4OID,      "real",                     HashClass::Double,   "double",   false, false, add_float4},
    {FLOAT8OID,      "double precision",         HashClass::Double,   "double",   true,  true,  add_float8},
    {NUMERICOID,     "numeric",                  HashClass::Decimal,  "decimal",  true,  true,  add_numeric},
    {UUIDOID,        "uuid",                     HashClass::Uuid,     "uuid",     true,  true,  add_uuid},
    {TIMESTAMPTZOID, "timestamp with time zone", HashClass::Datetime, "datetime", true,  true,  add_timestamptz},
};
// clang-format on

// Other names Picodata gives the same column types.
constexpr std::pair<std::string_view, std::string_view> kPicodataAliases[] = {
    {"unsigned", "integer"},
    {"bool", "boolean"},
};

std::string supported_key_types() {
    std::string hint = "Supported key types: ";
    const char *separator = "";
    for (const KeyType &type : kKeyTypes) {
        if (type.sql_name == nullptr)
            continue;
        hint += separator;
        hint += type.sql_name;
        separator = ", ";
    }
    return hint + ".";
}

void add_key_datum_unchecked(KeyEncoder &key, Oid type, Datum value, bool isnull, int position) {
    if (isnull) {
        key.add_null();
        return;
    }
    const KeyType *entry = find_key_type(type);
    if (entry == nullptr)
        throw SqlError(
            ERRCODE_DATATYPE_MISMATCH,
            "picoroute: cannot hash a sharding key value of type " + type_name(type) +
                (position > 0 ? " (key part " + std::to_string(position) + ")" : std::string()),
            {}, supported_key_types());
    entry->add(key, value);
}

}  // namespace

const KeyType *find_key_type(Oid type) {
    for (const KeyType &entry : kKeyTypes)
        if (entry.oid == type)
            return &entry;
    return nullptr;
}

HashClass hash_class(Oid type) {
    const KeyType *entry = find_key_type(type);
    return entry == nullptr ? HashClass::None : entry->hash_class;
}

const KeyType *key_type_for_picodata(std::string_view picodata_type) {
    for (const auto &alias : kPicodataAliases)
        if (alias.first == picodata_type)
            picodata_type = alias.second;
    for (const KeyType &entry : kKeyTypes)
        if (entry.canonical && entry.picodata_type == picodata_type)
            return &entry;
    return nullptr;
}

bool shippable_type(Oid type) {
    const KeyType *entry = find_key_type(type);
    return entry != nullptr && entry->shippable;
}

bool is_text_type(Oid type) {
    return shippable_type(type) && hash_class(type) == HashClass::Text;
}

bool is_number_type(Oid type) {
    HashClass kind = hash_class(type);
    return shippable_type(type) &&
           (kind == HashClass::Int || kind == HashClass::Double || kind == HashClass::Decimal);
}

void add_key_datum(KeyEncoder &key, Oid type, Datum value, bool isnull, int position) {
    if (position <= 0) {
        add_key_datum_unchecked(key, type, value, isnull, position);
        return;
    }
    try {
        add_key_datum_unchecked(key, type, value, isnull, position);
    } catch (const Error &e) {
        throw Error(e.kind(), "picoroute: key part " + std::to_string(position) + ": " + e.what(),
                    e.hint());
    }
}

uint32_t KeyHasher::bucket(uint32_t bucket_count) const {
    return bucket_id_for_bytes(key_.bytes(), bucket_count);
}

uint32_t key_bucket(int nparts, const Oid *types, const Datum *values, const bool *nulls,
                    uint32_t bucket_count, HashRule rule) {
    KeyHasher key(rule);
    for (int i = 0; i < nparts; i++)
        key.add(types[i], values[i], nulls[i]);
    return key.bucket(bucket_count);
}

}  // namespace picoroute::pg
