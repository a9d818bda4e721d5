// A row of Picodata's `_pico_table` (name, distribution, format) -> the description of a table
// that IMPORT FOREIGN SCHEMA turns into a foreign table. The json columns are parsed with
// nlohmann_json under a nesting limit; every name is checked to be valid UTF-8 without NUL
// characters, so that a hostile or broken catalog row gives a clear error naming the table rather
// than a truncated name or invalid text in the local catalog.
#pragma once
#include "core/firewall.h"

#include <string>
#include <vector>

namespace picoroute {

// Deeper json is refused before it is parsed (the catalog's own values nest 3 levels).
inline constexpr int kMaxCatalogJsonDepth = 32;

struct TableColumn {
    std::string name;
    std::string type;  // Picodata type ("integer", "string", ...); "any" when absent
    bool nullable = true;
};

struct TableSchema {
    std::string name;
    bool global = false;
    std::string tier = "default";           // of a sharded table
    std::vector<std::string> sharding_key;  // in hashing order
    std::vector<TableColumn> columns;       // bucket_id excluded
};

// Parses one `_pico_table` row. `max_name_bytes` is the longest name allowed (a longer one would
// be truncated by the local catalog). Throws Error(InvalidCatalog) naming the table and the column
// (`distribution` or `format`) for malformed json, json nested deeper than kMaxCatalogJsonDepth,
// a string with \u0000, invalid UTF-8, a name that is empty or too long, or a wrong shape.
TableSchema parse_table_schema(const std::string &name, const std::string &distribution,
                               const std::string &format, size_t max_name_bytes);

// Whether `_pico_table.opts` (26.1.1+: a json array of one-key objects, e.g.
// `[{"unlogged":[true]}]`, test/int/test_unlogged.py at 26.1.1 and 26.3.0; `[]` or NULL for
// other tables) marks the table unlogged: TableOption::Unlogged(true) in src/schema.rs:77-93
// (26.1.1). Other options (pk_contains_bucket_id, synchronous from 26.2.1-rc1) are ignored.
// `opts` "" (NULL, or a version without the column) is not unlogged. Throws like
// parse_table_schema for malformed json or a shape that is not an array.
bool parse_table_unlogged(const std::string &name, const std::string &opts);

// `text` with every byte that is not printable ASCII (and a backslash) written as \xNN, to name a
// table in an error whatever bytes its name holds.
std::string printable_name(const std::string &text);

// True when `text` is valid UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_utf8(const std::string &text);

}  // namespace picoroute
