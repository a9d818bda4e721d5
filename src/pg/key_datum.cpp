// PostgreSQL values -> Picodata key encodings (core/bucket_hash.h). Shared by the bucket-id SQL
// functions and the FDW's routing, so both hash exactly alike.
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

namespace picoroute::pg {

namespace {

// Seconds between 1970-01-01 (Picodata's datetime epoch) and 2000-01-01 (PostgreSQL's).
constexpr int64_t kPostgresEpochInUnixSeconds =
    static_cast<int64_t>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY;

}  // namespace

const char *const kSupportedKeyTypes =
    "Supported key types: smallint, integer, bigint, text, varchar, character, name, boolean, "
    "real, double precision, numeric, uuid, timestamp with time zone.";

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

}  // namespace

void add_key_datum_unchecked(KeyEncoder &key, Oid type, Datum value, bool isnull, int position) {
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
            throw SqlError(
                ERRCODE_DATATYPE_MISMATCH,
                "picoroute: cannot hash a sharding key value of type " + type_name(type) +
                    (position > 0 ? " (key part " + std::to_string(position) + ")" : std::string()),
                {}, kSupportedKeyTypes);
    }
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

}  // namespace picoroute::pg
