#include "core/routing/sqlstate_map.h"

namespace picoroute::routing {
namespace {

constexpr std::string_view kInternal = "XX000";

// clang-format off
constexpr SqlstateRule kRules[] = {
    // unique_violation
    {"Duplicate key exists in unique index", "23505",
     "tarantool src/box/errcode.h:58@picodata-25.5 (ER_TUPLE_FOUND); Picodata test/int/sql/example.sql:41@26.3.0"},
    {"duplicate key exists in table", "23505",
     "src/sql/conflict.rs:132@26.3.0 (INSERT ... ON CONFLICT)"},
    // not_null_violation
    {", got nil", "23502",
     "tarantool src/box/errcode.h:78, src/box/tuple_format.c:1049@picodata-25.5 (ER_FIELD_TYPE: \"Tuple field 2 (name) type does not match one required by operation: expected string, got nil\"); Picodata test/int/sql/insert_global_table.sql:64@26.3.0"},
    {"NOT NULL constraint failed", "23502",
     "tarantool src/box/sql/insert.c:827@picodata-25.5"},
    {"NonNull column ", "23502",
     "sql-planner/src/frontend/sql.rs:1725@25.5.10 (\"NonNull column \\\"c\\\" must be specified\")"},
    // division_by_zero
    {"division by zero", "22012",
     "tarantool src/box/sql/mem.c:2326@picodata-25.5 (ER_SQL_EXECUTE); Picodata test/int/sql/anonymous_block.sql:228@26.3.0"},
    // numeric_value_out_of_range
    {"integer is overflowed", "22003",
     "tarantool src/box/sql/mem.c:2089@picodata-25.5 (ER_SQL_EXECUTE)"},
    {"Integer overflow", "22003",
     "tarantool src/box/errcode.h:150@picodata-25.5 (ER_UPDATE_INTEGER_OVERFLOW); Picodata test/int/sql/anonymous_block.sql:856@26.3.0"},
    {"value doesn't fit into integer range", "22003",
     "sql-planner/src/frontend/sql.rs:2116@25.5.10, sql-frontend/src/frontend/sql/ast/ir_populator/helpers.rs:61@26.3.0"},
    {"out of range integral type conversion attempted", "22003",
     "Rust's TryFromIntError in Picodata's \"failed decoding i64: ...\" (test/int/sql/*.sql@25.5.10)"},
    // invalid_text_representation
    {"consider using explicit type casts", "22P02",
     "sql-planner/src/frontend/sql/type_system.rs:704@25.5.10, sql-frontend/src/frontend/sql/type_system.rs:648@26.3.0 (\"failed to parse 'x' as a value of type int, consider using explicit type casts\")"},
    // undefined_table
    {"sbroad: table with name \"", "42P01",
     "SbroadError::NotFound(Entity::Table, \"with name ...\"), sql-planner/src/frontend/sql.rs@25.5.1, sql-frontend/src/frontend/sql/ast/core.rs@26.3.0; src/traft/error.rs:139@25.5.10 (\"sbroad: \")"},
};
// clang-format on

}  // namespace

const SqlstateRule *sqlstate_rules(size_t *count) {
    *count = sizeof(kRules) / sizeof(kRules[0]);
    return kRules;
}

std::string_view sqlstate_for_remote_error(std::string_view remote_sqlstate,
                                           std::string_view message) {
    if (remote_sqlstate != kInternal)
        return remote_sqlstate;
    for (const SqlstateRule &rule : kRules)
        if (message.find(rule.text) != std::string_view::npos)
            return rule.sqlstate;
    return kInternal;
}

bool startup_refusal_is_final(std::string_view sqlstate) {
    if (sqlstate.size() != 5)
        return false;
    std::string_view cls = sqlstate.substr(0, 2);
    if (cls == "08" || cls == "53")
        return false;
    return !(sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03");
}

}  // namespace picoroute::routing
