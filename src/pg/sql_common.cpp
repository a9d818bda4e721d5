// Result rows from plain data, text arguments, and tier and bucket checks with errors that name
// them (see sql_common.h).
extern "C" {
#include "postgres.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"
}

#include "pg/sql_common.h"

#include "pg/guard.h"

#include <string>

namespace picoroute::pg {

Cell Cell::str(std::string_view value) {
    return Cell{Kind::Text, std::string(value)};
}

Cell Cell::str_or_null(std::string_view value) {
    return value.empty() ? null() : str(value);
}

Cell Cell::int4(int32_t value) {
    return Cell{Kind::Int4, {}, value};
}

Cell Cell::int8(int64_t value) {
    return Cell{Kind::Int8, {}, value};
}

Cell Cell::boolean(bool value) {
    return Cell{Kind::Bool, {}, 0, value};
}

Cell Cell::timestamptz(TimestampTz value) {
    return value == 0 ? null() : Cell{Kind::Timestamp, {}, value};
}

Cell Cell::float8(double value) {
    return Cell{Kind::Float8, {}, 0, false, value};
}

Cell Cell::oid(Oid value) {
    return Cell{Kind::Oid, {}, static_cast<int64_t>(value)};
}

namespace {

// Converts the cells into palloc'ed datums; runs inside pg_call.
void fill_datums(TupleDesc desc, const Row &row, Datum *values, bool *nulls) {
    if (desc->natts != static_cast<int>(row.size()))
        elog(ERROR, "picoroute: result has %d columns but the function returns %zu", desc->natts,
             row.size());
    for (size_t i = 0; i < row.size(); i++) {
        const Cell &cell = row[i];
        nulls[i] = cell.kind == Cell::Kind::Null;
        switch (cell.kind) {
            case Cell::Kind::Null:
                values[i] = (Datum)0;
                break;
            case Cell::Kind::Text:
                values[i] = PointerGetDatum(
                    cstring_to_text_with_len(cell.text.data(), static_cast<int>(cell.text.size())));
                break;
            case Cell::Kind::Int4:
                values[i] = Int32GetDatum(static_cast<int32>(cell.number));
                break;
            case Cell::Kind::Int8:
                values[i] = Int64GetDatum(cell.number);
                break;
            case Cell::Kind::Bool:
                values[i] = BoolGetDatum(cell.flag);
                break;
            case Cell::Kind::Timestamp:
                values[i] = TimestampTzGetDatum(cell.number);
                break;
            case Cell::Kind::Float8:
                values[i] = Float8GetDatum(cell.real);
                break;
            case Cell::Kind::Oid:
                values[i] = ObjectIdGetDatum(static_cast<Oid>(cell.number));
                break;
        }
    }
}

}  // namespace

Datum make_result_row(FunctionCallInfo fcinfo, const Row &row) {
    Datum result = (Datum)0;
    pg_call([&] {
        TupleDesc desc;
        if (get_call_result_type(fcinfo, nullptr, &desc) != TYPEFUNC_COMPOSITE)
            elog(ERROR,
                 "picoroute: function returning a record called in a context that cannot "
                 "accept it");
        desc = BlessTupleDesc(desc);
        Datum *values = static_cast<Datum *>(palloc0(sizeof(Datum) * (row.size() + 1)));
        bool *nulls = static_cast<bool *>(palloc0(sizeof(bool) * (row.size() + 1)));
        fill_datums(desc, row, values, nulls);
        result = HeapTupleGetDatum(heap_form_tuple(desc, values, nulls));
    });
    return result;
}

void return_rows(FunctionCallInfo fcinfo, const std::vector<Row> &rows) {
    pg_call([&] {
        InitMaterializedSRF(fcinfo, 0);
        ReturnSetInfo *rsinfo = reinterpret_cast<ReturnSetInfo *>(fcinfo->resultinfo);
        TupleDesc desc = rsinfo->setDesc;
        Datum *values = static_cast<Datum *>(palloc0(sizeof(Datum) * (desc->natts + 1)));
        bool *nulls = static_cast<bool *>(palloc0(sizeof(bool) * (desc->natts + 1)));
        for (const Row &row : rows) {
            fill_datums(desc, row, values, nulls);
            tuplestore_putvalues(rsinfo->setResult, desc, values, nulls);
        }
    });
}

std::string_view text_arg(FunctionCallInfo fcinfo, int argno) {
    text *value = nullptr;
    pg_call([&] { value = PG_GETARG_TEXT_PP(argno); });
    return std::string_view(VARDATA_ANY(value), VARSIZE_ANY_EXHDR(value));
}

Datum text_datum(std::string_view value) {
    Datum result = (Datum)0;
    pg_call([&] {
        result =
            PointerGetDatum(cstring_to_text_with_len(value.data(), static_cast<int>(value.size())));
    });
    return result;
}

int32_t require_tier(const SnapshotView &view, uint64_t generation, std::string_view name) {
    int32_t index = view.find_tier(name);
    if (index != kNone)
        return index;
    std::string message = "picoroute: unknown tier \"" + std::string(name) + "\"";
    std::string hint;
    if (generation == 0) {
        hint =
            "The topology map is not loaded yet; see picoroute_status for the worker's state "
            "and last error.";
    } else if (view.n_tiers() == 0) {
        hint = "The topology map knows no tiers yet; see picoroute_status.";
    } else {
        hint = "Known tiers: ";
        for (uint32_t i = 0; i < view.n_tiers(); i++) {
            if (i > 0)
                hint += ", ";
            hint += std::string(view.str(view.tier(i).name));
        }
        hint += ".";
    }
    throw SqlError(ERRCODE_UNDEFINED_OBJECT, message, {}, hint);
}

uint32_t require_bucket_count(const SnapshotView &view, int32_t tier_index) {
    const TierRecord &tier = view.tier(tier_index);
    if (tier.bucket_count != 0)
        return tier.bucket_count;
    throw SqlError(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                   "picoroute: the bucket_count of tier \"" + std::string(view.str(tier.name)) +
                       "\" is not known",
                   {},
                   "The tier's bucket_count has not been received yet (or the tier holds no "
                   "sharded data); see picoroute_tiers.");
}

uint32_t require_bucket_in_range(const SnapshotView &view, int32_t tier_index, int32_t bucket_id) {
    const TierRecord &tier = view.tier(tier_index);
    const bool too_high = tier.bucket_count != 0 &&
                          static_cast<int64_t>(bucket_id) > static_cast<int64_t>(tier.bucket_count);
    if (bucket_id >= 1 && !too_high)
        return static_cast<uint32_t>(bucket_id);
    const std::string tier_name(view.str(tier.name));
    std::string hint = tier.bucket_count != 0
                           ? "Bucket ids of tier \"" + tier_name + "\" run from 1 to " +
                                 std::to_string(tier.bucket_count) + "."
                           : "Bucket ids start at 1.";
    throw SqlError(ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
                   "picoroute: bucket id " + std::to_string(bucket_id) +
                       " is out of range for tier \"" + tier_name + "\"",
                   {}, hint);
}

}  // namespace picoroute::pg
