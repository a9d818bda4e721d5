// `_pico_table` rows -> table descriptions (see table_schema.h).
#include "core/table_schema.h"

#include "core/errors.h"

#include <nlohmann/json.hpp>

namespace picoroute {

namespace {

using nlohmann::json;

[[noreturn]] void bad_row(const std::string &table, const std::string &what) {
    throw Error(ErrorKind::InvalidCatalog,
                "picoroute: cannot import table \"" + printable_name(table) + "\": " + what,
                "The _pico_table row of this table cannot be understood; skip it with EXCEPT.");
}

// The deepest nesting of arrays and objects in `text`, counted without parsing (strings skipped),
// stopping as soon as it passes `limit`.
int nesting_depth(const std::string &text, int limit) {
    int depth = 0, deepest = 0;
    bool in_string = false, escaped = false;
    for (char c : text) {
        if (in_string) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > deepest)
                deepest = depth;
            if (deepest > limit)
                return deepest;
        } else if (c == ']' || c == '}') {
            depth--;
        }
    }
    return deepest;
}

json parse_column(const std::string &table, const char *column, const std::string &text) {
    if (nesting_depth(text, kMaxCatalogJsonDepth) > kMaxCatalogJsonDepth)
        bad_row(table, std::string(column) + ": json nested deeper than " +
                           std::to_string(kMaxCatalogJsonDepth) + " levels");
    try {
        return json::parse(text);
    } catch (const json::exception &e) {
        // nlohmann_json refuses invalid escapes, lone surrogates and invalid UTF-8.
        bad_row(table, std::string(column) + ": invalid json (" + e.what() + ")");
    }
}

// A name for the local catalog: a json string, valid UTF-8, no NUL, not empty, not too long.
std::string checked_name(const std::string &table, const char *what, const json &value,
                         size_t max_bytes) {
    if (!value.is_string())
        bad_row(table, std::string(what) + " is not a json string");
    std::string name = value.get<std::string>();
    if (name.empty())
        bad_row(table, std::string(what) + " is empty");
    if (name.find('\0') != std::string::npos)
        bad_row(table, std::string(what) + " \"" + printable_name(name) +
                           "\" contains a NUL character (\\u0000)");
    if (!valid_utf8(name))
        bad_row(table, std::string(what) + " \"" + printable_name(name) + "\" is not valid UTF-8");
    if (name.size() > max_bytes)
        bad_row(table, std::string(what) + " \"" + printable_name(name) + "\" is longer than " +
                           std::to_string(max_bytes) + " bytes and would be truncated");
    return name;
}

}  // namespace

bool valid_utf8(const std::string &text) {
    const auto *p = reinterpret_cast<const unsigned char *>(text.data());
    size_t n = text.size(), i = 0;
    while (i < n) {
        unsigned char c = p[i];
        size_t len;
        uint32_t code;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            len = 2;
            code = c & 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            len = 3;
            code = c & 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            len = 4;
            code = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80)
                return false;
            code = (code << 6) | (p[i + k] & 0x3F);
        }
        if ((len == 2 && code < 0x80) || (len == 3 && code < 0x800) ||
            (len == 4 && code < 0x10000) || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF))
            return false;
        i += len;
    }
    return true;
}

std::string printable_name(const std::string &text) {
    static const char *hex = "0123456789abcdef";
    std::string out;
    bool utf8 = valid_utf8(text);
    for (unsigned char c : text) {
        if ((c >= 0x20 && c < 0x7F && c != '\\') || (utf8 && c >= 0x80)) {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 0xF];
        }
    }
    return out;
}

TableSchema parse_table_schema(const std::string &name, const std::string &distribution,
                               const std::string &format, size_t max_name_bytes) {
    TableSchema out;
    out.name = checked_name(name, "the table name", json(name), max_name_bytes);
    json dist = parse_column(name, "distribution", distribution);
    json fmt = parse_column(name, "format", format);
    if (!dist.is_object())
        bad_row(name, "distribution is not a json object");
    if (dist.contains("Global")) {
        out.global = true;
    } else if (dist.contains("ShardedImplicitly")) {
        // [["col", ...], "murmur3", "<tier>"]
        const json &d = dist["ShardedImplicitly"];
        if (!d.is_array() || d.empty() || !d[0].is_array())
            bad_row(name, "distribution.ShardedImplicitly is not [[columns], hash, tier]");
        for (const json &c : d[0])
            out.sharding_key.push_back(
                checked_name(name, "a sharding key column", c, max_name_bytes));
        if (d.size() >= 3 && !d[2].is_null())
            out.tier = checked_name(name, "the tier", d[2], max_name_bytes);
    } else if (dist.contains("ShardedByField")) {
        // [field, tier]
        const json &d = dist["ShardedByField"];
        if (!d.is_array() || d.empty())
            bad_row(name, "distribution.ShardedByField is not [field, tier]");
        out.sharding_key.push_back(checked_name(name, "the sharding field", d[0], max_name_bytes));
        if (d.size() >= 2 && !d[1].is_null())
            out.tier = checked_name(name, "the tier", d[1], max_name_bytes);
    } else {
        bad_row(name, "unknown distribution " + printable_name(dist.dump()));
    }
    if (!fmt.is_array())
        bad_row(name, "format is not a json array");
    for (const json &field : fmt) {
        if (!field.is_object() || !field.contains("name"))
            bad_row(name, "format has an entry without a name");
        TableColumn column;
        column.name = checked_name(name, "a column name", field["name"], max_name_bytes);
        if (column.name == "bucket_id")
            continue;
        if (field.contains("field_type")) {
            if (!field["field_type"].is_string())
                bad_row(name, "the type of column \"" + printable_name(column.name) +
                                  "\" is not a json string");
            column.type = field["field_type"].get<std::string>();
        } else {
            column.type = "any";
        }
        if (field.contains("is_nullable") && field["is_nullable"].is_boolean())
            column.nullable = field["is_nullable"].get<bool>();
        out.columns.push_back(std::move(column));
    }
    if (out.columns.empty())
        bad_row(name, "format lists no column");
    return out;
}

bool parse_table_unlogged(const std::string &name, const std::string &opts) {
    if (opts.empty())
        return false;
    json value = parse_column(name, "opts", opts);
    if (value.is_null())
        return false;
    if (!value.is_array())
        bad_row(name, "opts is not a json array");
    for (const json &option : value) {
        if (!option.is_object() || !option.contains("unlogged"))
            continue;
        // Encoded as a one-element array (a tuple variant), accepted bare too.
        const json &flag = option["unlogged"];
        if (flag == json(true) || flag == json::array({true}))
            return true;
    }
    return false;
}

}  // namespace picoroute
