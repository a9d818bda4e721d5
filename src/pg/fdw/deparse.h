// Writing statements and expressions in Picodata's SQL (deparse.cpp): plain C style.
#pragma once

extern "C" {
#include "postgres.h"

#include "lib/stringinfo.h"
#include "nodes/pathnodes.h"
#include "utils/rel.h"
}

#include "pg/fdw/options.h"

namespace picoroute::pg::fdw {

// SELECT <attrs_used> FROM <table> [WHERE <remote_conds>]; fills retrieved_attrs (attnums in
// select-list order) and params (expressions sent as $1..$n). *has_where tells whether a WHERE
// clause was written; *from_offset, when given, the offset in buf of " FROM".
void deparse_select(StringInfo buf, PlannerInfo *root, RelOptInfo *rel, Relation relation,
                    TableInfo *table, Bitmapset *attrs_used, List *remote_conds,
                    List **retrieved_attrs, List **params, bool *has_where,
                    int *from_offset = nullptr);
// UPDATE <table> SET col = expr, ... [WHERE ...] / DELETE FROM <table> [WHERE ...].
void deparse_update(StringInfo buf, PlannerInfo *root, RelOptInfo *rel, Relation relation,
                    TableInfo *table, List *target_attrs, List *target_exprs, List *remote_conds,
                    List **params, bool *has_where);
void deparse_delete(StringInfo buf, PlannerInfo *root, RelOptInfo *rel, Relation relation,
                    TableInfo *table, List *remote_conds, List **params, bool *has_where);
// Writes `constant` as a statement of `relid` carries it: a literal, or $n (appended to *params)
// for a value that goes as a parameter. The route check writes its sample keys so.
void deparse_constant(StringInfo buf, Oid relid, Const *constant, List **params);
// INSERT INTO <table> (cols) VALUES ($1, ...), (...) for `nrows` rows.
void deparse_insert(StringInfo buf, Relation relation, TableInfo *table, List *target_attrs,
                    int nrows);
const char *quote_remote_identifier(const char *name);
// Writes one expression over the tables of a pushed join (is_foreign_expr with the join relation
// accepted it): every column as "r<range table index>"."name". Between set_transmission_modes and
// reset_transmission_modes.
void deparse_join_expr(StringInfo buf, PlannerInfo *root, Node *expr, List **params);
// Writes one expression that is_foreign_expr accepted (columns of `relid`, aggregates included).
// Call between set_transmission_modes and reset_transmission_modes.
void deparse_expr(StringInfo buf, Oid relid, Node *expr, List **params);

}  // namespace picoroute::pg::fdw
