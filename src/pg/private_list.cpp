// Typed plan structs to and from PostgreSQL Lists (see private_list.h).
extern "C" {
#include "postgres.h"

#include "nodes/nodes.h"
#include "nodes/value.h"
#include "utils/builtins.h"
}

#include "pg/private_list.h"
#include "pg/settings.h"

namespace picoroute::pg {

void PrivateWriter::put_int(int value) {
    list_ = lappend(list_, makeInteger(value));
}

void PrivateWriter::put_bool(bool value) {
    list_ = lappend(list_, makeBoolean(value));
}

void PrivateWriter::put_int64(int64 value) {
    list_ = lappend(list_, makeString(psprintf(INT64_FORMAT, value)));
}

void PrivateWriter::put_oid(Oid value) {
    list_ = lappend(list_, makeInteger(static_cast<int>(value)));
}

void PrivateWriter::put_string(const char *value) {
    list_ = lappend(list_, value == nullptr ? nullptr : makeString(pstrdup(value)));
}

void PrivateWriter::put_list(List *value) {
    list_ = lappend(list_, value);
}

void PrivateWriter::put_node(Node *value) {
    list_ = lappend(list_, value);
}

Node *PrivateReader::next(NodeTag expected) {
    if (pos_ >= list_length(list_))
        elog(ERROR, "picoroute: the private data of a %s ends after %d fields", what_, pos_);
    Node *node = static_cast<Node *>(list_nth(list_, pos_++));
    if (expected != T_Invalid && (node == nullptr || nodeTag(node) != expected))
        elog(ERROR, "picoroute: field %d of the private data of a %s has node type %d, not %d",
             pos_ - 1, what_, node == nullptr ? 0 : static_cast<int>(nodeTag(node)),
             static_cast<int>(expected));
    return node;
}

int PrivateReader::get_int() {
    return intVal(next(T_Integer));
}

bool PrivateReader::get_bool() {
    return boolVal(next(T_Boolean));
}

int64 PrivateReader::get_int64() {
    char *text = strVal(next(T_String));
    return pg_strtoint64(text);
}

Oid PrivateReader::get_oid() {
    return static_cast<Oid>(intVal(next(T_Integer)));
}

char *PrivateReader::get_string() {
    Node *node = next(T_Invalid);
    if (node == nullptr)
        return nullptr;
    if (!IsA(node, String))
        elog(ERROR, "picoroute: field %d of the private data of a %s is not a string", pos_ - 1,
             what_);
    return strVal(node);
}

List *PrivateReader::get_list() {
    Node *node = next(T_Invalid);
    if (node != nullptr && !IsA(node, List) && !IsA(node, IntList) && !IsA(node, OidList))
        elog(ERROR, "picoroute: field %d of the private data of a %s is not a list", pos_ - 1,
             what_);
    return reinterpret_cast<List *>(node);
}

Node *PrivateReader::get_node() {
    return next(T_Invalid);
}

void PrivateReader::finish() const {
    if (pos_ != list_length(list_))
        elog(ERROR, "picoroute: the private data of a %s has %d fields, its decoding read %d",
             what_, list_length(list_), pos_);
}

List *check_private_round_trip(List *list, List *(*reencode)(List *), const char *what) {
    if (!setting_check_plans)
        return list;
    if (!equal(copyObjectImpl(list), list))
        elog(ERROR, "picoroute: the private data of a %s changes under copyObject", what);
    char *text = nodeToString(list);
    List *read = static_cast<List *>(stringToNode(text));
    if (!equal(read, list))
        elog(ERROR,
             "picoroute: the private data of a %s changes when written out and read back: %s", what,
             text);
    List *again = reencode(read);
    if (!equal(again, list))
        elog(ERROR,
             "picoroute: the private data of a %s decodes to other fields: %s, encoded again %s",
             what, text, nodeToString(again));
    return list;
}

}  // namespace picoroute::pg
