// The typed plan structs of plan_private.h to and from fdw_private: for each struct, one writer
// and one decode side by side, the fields in one order; encode is the writer with its round trip
// checked when picoroute.check_plans is on (private_list.h).
extern "C" {
#include "postgres.h"
}

#include "pg/fdw/plan_private.h"
#include "pg/private_list.h"

namespace picoroute::pg::fdw {

namespace {

void put_statement(PrivateWriter &w, const StatementPlan &s) {
    w.put_string(s.sql);
    w.put_bool(s.has_where);
    w.put_int(s.nparams);
    w.put_list(s.key_kinds);
    w.put_int(s.where_chains);
}

StatementPlan get_statement(PrivateReader &r) {
    StatementPlan s;
    s.sql = r.get_string();
    s.has_where = r.get_bool();
    s.nparams = r.get_int();
    s.key_kinds = r.get_list();
    s.where_chains = r.get_int();
    return s;
}

// A ForeignScan's fdw_private starts with its kind; the reader is past it.
PrivateReader scan_reader(List *fdw_private, PlanKind expected, const char *what) {
    PrivateReader r(fdw_private, what);
    if (static_cast<PlanKind>(r.get_int()) != expected)
        elog(ERROR, "picoroute: the private data of a ForeignScan is not a %s", what);
    return r;
}

}  // namespace

PlanKind plan_kind(List *fdw_private) {
    PrivateReader r(fdw_private, "picoroute ForeignScan");
    return static_cast<PlanKind>(r.get_int());
}

static List *write_base_scan(const BaseScanPlan &plan) {
    PrivateWriter w;
    w.put_int(static_cast<int>(PlanKind::BaseScan));
    put_statement(w, plan.statement);
    w.put_list(plan.retrieved_attrs);
    w.put_bool(plan.lookup);
    w.put_int(plan.from_offset);
    w.put_int64(plan.row_limit);
    w.put_string(plan.array_column);
    w.put_int(plan.array_max_values);
    return w.list();
}

BaseScanPlan decode_base_scan(List *fdw_private) {
    PrivateReader r = scan_reader(fdw_private, PlanKind::BaseScan, "base scan");
    BaseScanPlan plan;
    plan.statement = get_statement(r);
    plan.retrieved_attrs = r.get_list();
    plan.lookup = r.get_bool();
    plan.from_offset = r.get_int();
    plan.row_limit = r.get_int64();
    plan.array_column = r.get_string();
    plan.array_max_values = r.get_int();
    r.finish();
    return plan;
}

static List *write_pushed_scan(const PushedScanPlan &plan) {
    PrivateWriter w;
    w.put_int(static_cast<int>(plan.kind));
    put_statement(w, plan.statement);
    w.put_string(plan.tail);
    w.put_int64(plan.offset);
    w.put_int(static_cast<int>(plan.anchor));
    w.put_int(plan.work);
    return w.list();
}

PushedScanPlan decode_pushed_scan(List *fdw_private) {
    PlanKind kind = plan_kind(fdw_private);
    if (kind != PlanKind::Join && kind != PlanKind::Upper)
        elog(ERROR, "picoroute: the private data of a ForeignScan is not a pushed scan");
    PrivateReader r = scan_reader(fdw_private, kind, "pushed scan");
    PushedScanPlan plan;
    plan.kind = kind;
    plan.statement = get_statement(r);
    plan.tail = r.get_string();
    plan.offset = r.get_int64();
    plan.anchor = static_cast<Index>(r.get_int());
    plan.work = r.get_int();
    r.finish();
    return plan;
}

static List *write_direct_modify(const DirectModifyPlan &plan) {
    PrivateWriter w;
    w.put_int(static_cast<int>(PlanKind::DirectModify));
    put_statement(w, plan.statement);
    w.put_bool(plan.set_processed);
    return w.list();
}

DirectModifyPlan decode_direct_modify(List *fdw_private) {
    PrivateReader r = scan_reader(fdw_private, PlanKind::DirectModify, "direct modification");
    DirectModifyPlan plan;
    plan.statement = get_statement(r);
    plan.set_processed = r.get_bool();
    r.finish();
    return plan;
}

static List *write_modify(const ModifyPlan &plan) {
    PrivateWriter w;
    w.put_bool(plan.row_by_row);
    w.put_int(static_cast<int>(plan.operation));
    w.put_list(plan.target_attrs);
    return w.list();
}

ModifyPlan decode_modify(List *fdw_private) {
    ModifyPlan plan;
    if (fdw_private == NIL)  // a partition reached by tuple routing
        return plan;
    PrivateReader r(fdw_private, "foreign modification");
    plan.row_by_row = r.get_bool();
    plan.operation = static_cast<CmdType>(r.get_int());
    plan.target_attrs = r.get_list();
    r.finish();
    return plan;
}

// ---- encode: the fields written, then (picoroute.check_plans) their round trip checked ----------

List *encode(const BaseScanPlan &plan) {
    return check_private_round_trip(
        write_base_scan(plan), [](List *l) { return write_base_scan(decode_base_scan(l)); },
        "base scan");
}

List *encode(const PushedScanPlan &plan) {
    return check_private_round_trip(
        write_pushed_scan(plan), [](List *l) { return write_pushed_scan(decode_pushed_scan(l)); },
        "pushed scan");
}

List *encode(const DirectModifyPlan &plan) {
    return check_private_round_trip(
        write_direct_modify(plan),
        [](List *l) { return write_direct_modify(decode_direct_modify(l)); },
        "direct modification");
}

List *encode(const ModifyPlan &plan) {
    return check_private_round_trip(
        write_modify(plan), [](List *l) { return write_modify(decode_modify(l)); },
        "foreign modification");
}

}  // namespace picoroute::pg::fdw
