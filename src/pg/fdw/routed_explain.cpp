// EXPLAIN's lines of a routed statement (routed.h): "Remote SQL", "Routing" and, under ANALYZE,
// what the executions sent beyond their statements; and whether the routing can be told before the
// statement runs. The decision itself is explain_routing's (routed.cpp).
extern "C" {
#include "postgres.h"

#include "commands/explain.h"
#include "nodes/nodeFuncs.h"
#include "nodes/params.h"
}

#include "pg/fdw/routed.h"
#include "pg/remote/chunked_read.h"
#include "pg/remote/stream.h"

namespace picoroute::pg::fdw {

namespace {

// True when `node` holds a parameter whose value EXPLAIN does not have: a PARAM_EXEC (set by an
// outer plan node or a subquery while the statement runs; an EXPLAIN without ANALYZE, or an
// auto_explain of a plan part that never ran, has no value for it, and its slot holds a Datum that
// was never computed), or an external parameter without a value.
bool unknown_param_walker(Node *node, void *context) {
    if (node == nullptr)
        return false;
    if (IsA(node, Param)) {
        Param *param = reinterpret_cast<Param *>(node);
        ExprContext *econtext = static_cast<ExprContext *>(context);
        if (param->paramkind != PARAM_EXTERN)
            return true;
        ParamListInfo params = econtext->ecxt_param_list_info;
        if (params == nullptr || param->paramid < 1 || param->paramid > params->numParams)
            return true;
        if (params->paramFetch != nullptr)
            return false;
        ParamExternData *prm = &params->params[param->paramid - 1];
        return !OidIsValid(prm->ptype) || prm->ptype != param->paramtype;
    }
    return expression_tree_walker(
        node, reinterpret_cast<bool (*)()>(reinterpret_cast<void *>(unknown_param_walker)),
        context);
}

}  // namespace

bool routing_params_unknown(RoutedStatement *st, ExprContext *econtext) {
    ListCell *lc;
    foreach (lc, st->keys.states) {
        ExprState *state = static_cast<ExprState *>(lfirst(lc));
        if (unknown_param_walker(reinterpret_cast<Node *>(state->expr), econtext))
            return true;
    }
    return false;
}

void explain_remote(RoutedStatement *st, ForeignScanState *node, ExplainState *es,
                    const char *sql) {
    // The statement as it is sent (with its OPTION clause) when the routing resolves to a single
    // instance now (EXPLAIN ANALYZE, or keys given as constants).
    if (sql == nullptr)
        sql = st->statement->plan.sql;
    const char *routing = st->last.routing;
    if (routing == nullptr) {
        ExprContext *econtext = node->ss.ps.ps_ExprContext;
        explain_routing(st, econtext, routing_params_unknown(st, econtext), &routing, &sql);
    }
    ExplainPropertyText("Remote SQL", sql, es);
    ExplainPropertyText("Routing", routing, es);
    if (es->analyze) {
        uint32 again = st->counts.sent_again +
                       (st->answers.stream != nullptr ? st->answers.stream->sent_again() : 0) +
                       (st->answers.chunked != nullptr ? st->answers.chunked->sent_again() : 0);
        if (again > 0)
            ExplainPropertyUInteger("Sent Again", nullptr, again, es);
        uint32 chunks =
            st->counts.chunks + (st->answers.chunked != nullptr ? st->answers.chunked->sent() : 0);
        if (chunks > 0)
            ExplainPropertyUInteger("Chunks", nullptr, chunks, es);
    }
}

}  // namespace picoroute::pg::fdw
