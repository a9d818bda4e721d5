// The batched join's path and plan structs to and from custom_private (see plan_private.h).
extern "C" {
#include "postgres.h"
}

#include "pg/batch_join/plan_private.h"
#include "pg/private_list.h"

namespace picoroute::pg::batch_join {

namespace {

List *write_plan(const BatchedJoinPlan &plan) {
    PrivateWriter w;
    w.put_string(plan.statement.sql);
    w.put_bool(plan.statement.has_where);
    w.put_int(plan.statement.nparams);
    w.put_list(plan.statement.key_kinds);
    w.put_int(plan.statement.where_chains);
    w.put_string(plan.key_column);
    w.put_int(plan.batch_size);
    w.put_int(plan.max_keys);
    w.put_list(plan.retrieved_attrs);
    w.put_list(plan.sources);
    w.put_int(plan.outer_key);
    w.put_oid(plan.eq_op);
    w.put_oid(plan.collation);
    w.put_int(plan.key_attno);
    w.put_int(static_cast<int>(plan.jointype));
    return w.list();
}

}  // namespace

BatchedJoinPlan decode_plan(List *custom_private) {
    PrivateReader r(custom_private, "batched join");
    BatchedJoinPlan plan;
    plan.statement.sql = r.get_string();
    plan.statement.has_where = r.get_bool();
    plan.statement.nparams = r.get_int();
    plan.statement.key_kinds = r.get_list();
    plan.statement.where_chains = r.get_int();
    plan.key_column = r.get_string();
    plan.batch_size = r.get_int();
    plan.max_keys = r.get_int();
    plan.retrieved_attrs = r.get_list();
    plan.sources = r.get_list();
    plan.outer_key = r.get_int();
    plan.eq_op = r.get_oid();
    plan.collation = r.get_oid();
    plan.key_attno = static_cast<AttrNumber>(r.get_int());
    plan.jointype = static_cast<JoinType>(r.get_int());
    r.finish();
    return plan;
}

List *encode(const BatchedJoinPlan &plan) {
    return check_private_round_trip(
        write_plan(plan), [](List *l) { return write_plan(decode_plan(l)); }, "batched join");
}

// A path is never copied or written out (the planner keeps it in memory): no round trip to check.
List *encode(const BatchedJoinPath &path) {
    PrivateWriter w;
    w.put_list(path.restrictlist);
    w.put_node(reinterpret_cast<Node *>(path.outer_var));
    w.put_oid(path.eq_op);
    w.put_oid(path.collation);
    w.put_int(static_cast<int>(path.inner_relid));
    w.put_int(static_cast<int>(path.jointype));
    return w.list();
}

BatchedJoinPath decode_path(List *custom_private) {
    PrivateReader r(custom_private, "batched join path");
    BatchedJoinPath path;
    path.restrictlist = r.get_list();
    path.outer_var = reinterpret_cast<Var *>(r.get_node());
    path.eq_op = r.get_oid();
    path.collation = r.get_oid();
    path.inner_relid = static_cast<Index>(r.get_int());
    path.jointype = static_cast<JoinType>(r.get_int());
    r.finish();
    return path;
}

List *encode(const BatchedJoinExprs &exprs) {
    return lappend(lappend(list_copy(exprs.params), exprs.join_quals), exprs.inner_quals);
}

BatchedJoinExprs decode_exprs(List *custom_exprs, int nparams) {
    if (nparams < 0 || list_length(custom_exprs) != nparams + 2)
        elog(ERROR, "picoroute: batched join expressions: %d, expected %d",
             list_length(custom_exprs), nparams + 2);
    BatchedJoinExprs exprs;
    exprs.params = list_copy_head(custom_exprs, nparams);
    exprs.join_quals = static_cast<List *>(list_nth(custom_exprs, nparams));
    exprs.inner_quals = static_cast<List *>(llast(custom_exprs));
    return exprs;
}

}  // namespace picoroute::pg::batch_join
