// The fields of a typed plan struct as a PostgreSQL List of copyable nodes: what a plan node
// carries to the executor in ForeignScan.fdw_private, ModifyTable's fdw_private list or
// CustomScan.custom_private. A plan may be copied (copyObject: plan caches) and written out and
// read back (nodeToString / stringToNode: parallel workers), so only Integer, Boolean and String
// nodes, integer lists, plain node trees and NIL go in.
//
// Each plan struct has exactly one encode (a PrivateWriter putting its fields in one order) and
// one decode (a PrivateReader taking them in the same order), side by side; nothing else indexes
// these lists. Plain C style: the reader ereports on a list that does not match.
#pragma once

extern "C" {
#include "postgres.h"

#include "nodes/pg_list.h"
}

namespace picoroute::pg {

class PrivateWriter {
  public:
    void put_int(int value);
    void put_bool(bool value);
    // Written as decimal text: an Integer node holds an int only.
    void put_int64(int64 value);
    void put_oid(Oid value);
    // nullptr is kept as an empty element (no String).
    void put_string(const char *value);
    // A List of nodes, an integer list or NIL.
    void put_list(List *value);
    // Any copyable node tree (an expression), or nullptr.
    void put_node(Node *value);
    List *list() const { return list_; }

  private:
    List *list_ = NIL;
};

class PrivateReader {
  public:
    // `what` names the plan struct in errors.
    PrivateReader(List *list, const char *what) : list_(list), what_(what) {}
    int get_int();
    bool get_bool();
    int64 get_int64();
    Oid get_oid();
    char *get_string();
    List *get_list();
    Node *get_node();
    // Fails when fields are left: the list was not written by the matching encode.
    void finish() const;

  private:
    Node *next(NodeTag expected);

    List *list_;
    const char *what_;
    int pos_ = 0;
};

// With picoroute.check_plans on (the test suites turn it on): `list`, the encoding of a plan
// struct named `what`, survives copyObject and nodeToString / stringToNode unchanged, and
// `reencode` (its decode then its encode) gives the same list back: a field that decode drops or
// misreads shows as a difference. ereports (XX000) on a difference; returns `list`.
List *check_private_round_trip(List *list, List *(*reencode)(List *), const char *what);

}  // namespace picoroute::pg
