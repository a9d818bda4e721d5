// What Picodata can evaluate (shippable.cpp): plain C style.
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/pathnodes.h"
}

namespace picoroute::pg::fdw {

// True when `expr` can be evaluated by Picodata (columns of `rel`, constants, parameters, values
// of an outer row and the supported operators).
bool is_foreign_expr(PlannerInfo *root, RelOptInfo *rel, Expr *expr);
// A value computed here for each outer row and sent as a parameter: an expression over columns of
// other relations of the same query level (the other side of a join clause, a lateral reference),
// with no column of relation `relid`, no volatile function, no subquery, aggregate or placeholder.
bool is_outer_value(Node *node, Index relid);
// A length coercion (varchar(n), character(n), numeric(p,s), timestamptz(p)) of a value with no
// column, no volatile function and no subquery: evaluated here and sent as a parameter, so that
// Picodata gets the value PostgreSQL would store and PostgreSQL raises its own errors.
bool is_local_coercion(Node *node);
// is_local_coercion or is_outer_value: a value computed here and sent as $n.
bool is_local_value(Node *node, Index relid);
// The kinds of operators Picodata implements with PostgreSQL's meaning (shippable.cpp decides,
// deparse.cpp writes them).
enum class OpKind { None, Compare, Order, Arith, Negate, Like, NotLike, ILike, NotILike };

struct RemoteOp {
    OpKind kind = OpKind::None;
    const char *spelling = nullptr;
};
// The remote form of a builtin operator with `nargs` arguments (the allow-list); kind None when
// Picodata has no operator with its meaning.
RemoteOp remote_operator(Oid opno, int nargs);

}  // namespace picoroute::pg::fdw
