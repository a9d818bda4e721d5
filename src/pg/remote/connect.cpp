// Opening connections to Picodata instances (see connect.h), and the credentials of
// picoroute.conninfo.
extern "C" {
#include "postgres.h"

#include "miscadmin.h"
#include "utils/errcodes.h"
#include "utils/timestamp.h"
}

#include "pg/remote/connect.h"

#include "core/routing/sqlstate_map.h"
#include "core/address.h"
#include "core/routing/answer.h"
#include "pg/connect_policy.h"
#include "pg/guard.h"
#include "pg/libpq_io.h"
#include "pg/settings.h"

#include <cstdlib>
#include <cstring>

namespace picoroute::pg::remote {

namespace {

void ignore_notice(void *, const char *) {}

// The SQLSTATE of the error the server sent while the connection started (the verbose form of
// libpq's message: "FATAL:  3D000: ..."), or "" when there is none (a network failure).
std::string startup_sqlstate(const std::string &message) {
    for (const char *severity : {"FATAL:  ", "ERROR:  "}) {
        size_t at = message.find(severity);
        if (at == std::string::npos)
            continue;
        std::string code = message.substr(at + strlen(severity), 7);
        if (code.size() == 7 && code.compare(5, 2, ": ") == 0)
            return code.substr(0, 5);
    }
    return "";
}

// A failed login, told apart from an unreachable instance: the server's SQLSTATE (class 28, from
// the verbose form of libpq's message) or a password the server asked for and did not get.
// Returns the SQLSTATE, or 0 when the failure is not an authentication failure.
int authentication_failure(PGconn *conn, const std::string &message) {
    if (PQconnectionNeedsPassword(conn))
        return ERRCODE_INVALID_AUTHORIZATION_SPECIFICATION;
    std::string code = startup_sqlstate(message);
    if (code.compare(0, 2, "28") == 0)
        return MAKE_SQLSTATE(code[0], code[1], code[2], code[3], code[4]);
    return 0;
}

// libpq's message as the default verbosity writes it: no SQLSTATE after the severity, no
// LOCATION line.
std::string without_verbose_parts(const std::string &message) {
    std::string out;
    size_t begin = 0;
    while (begin <= message.size()) {
        size_t end = message.find('\n', begin);
        if (end == std::string::npos)
            end = message.size();
        std::string line = message.substr(begin, end - begin);
        begin = end + 1;
        if (line.compare(0, 9, "LOCATION:") == 0)
            continue;
        for (const char *severity : {"FATAL:  ", "ERROR:  "}) {
            size_t at = line.find(severity);
            size_t code = at + strlen(severity);
            if (at != std::string::npos && line.size() > code + 7 &&
                line.compare(code + 5, 2, ": ") == 0)
                line.erase(code, 7);
        }
        out += (out.empty() ? "" : "\n") + line;
    }
    return libpq_message(out.c_str());
}

// The server's message without libpq's prefix, SQLSTATE and LOCATION line.
std::string server_message(const std::string &message) {
    std::string out = message;
    for (const char *severity : {"FATAL:  ", "ERROR:  "}) {
        size_t at = out.find(severity);
        if (at != std::string::npos) {
            out = out.substr(at + strlen(severity));
            if (out.size() > 7 && out.compare(5, 2, ": ") == 0)
                out = out.substr(7);
            break;
        }
    }
    size_t newline = out.find('\n');
    return newline == std::string::npos ? out : out.substr(0, newline);
}

struct ConnCloser {
    PGconn *conn;
    ~ConnCloser() {
        if (conn != nullptr)
            PQfinish(conn);
    }
};

// The address comes from the map: a TCP host:port where picoroute may connect, or nothing.
TcpAddress connect_target(const std::string &address) {
    TcpAddress target;
    std::string refusal = connect_refusal(address, &target);
    if (!refusal.empty())
        throw SqlError(
            ERRCODE_INSUFFICIENT_PRIVILEGE,
            "picoroute: refused to connect to Picodata instance " + utf8_truncate(address, 100),
            "The " + refusal + ".",
            "picoroute connects only to TCP addresses host:port allowed by "
            "picoroute.allowed_hosts; check the topology (picoroute_instances) and the "
            "setting.");
    return target;
}

// Whether the connection sent startup options: picoroute.conninfo's keyword options (the user's
// own, picoroute_exec), or libpq's default from PGOPTIONS.
bool user_startup_options(const ConnParams &params) {
    if (!params.server_name.empty())
        return false;
    for (const auto &[keyword, value] : params.options)
        if (keyword == "options")
            return !value.empty();
    const char *env = getenv("PGOPTIONS");
    return env != nullptr && env[0] != '\0';
}

// The instance closed the connection while it opened, without an answer
// (routing::closed_at_startup): Picodata refusing the startup packet. With the user's own startup
// options that is their fault, and every instance refuses them alike: an error of its own, not
// retried elsewhere. Else (the FDW's options are picoroute's, read by every release) a
// ConnectionFailure that says so.
[[noreturn]] void closed_at_startup(const std::string &message, const std::string &address,
                                    const ConnParams &params) {
    if (user_startup_options(params))
        throw SqlError(ERRCODE_SQLSERVER_REJECTED_ESTABLISHMENT_OF_SQLCONNECTION,
                       "picoroute: Picodata instance " + utf8_truncate(address, 100) +
                           " closed the connection at startup without an answer",
                       routing::kClosedAtStartupDetail,
                       "Check the keyword options of picoroute.conninfo (and PGOPTIONS): Picodata "
                       "reads name=value,name=value there (sql_motion_row_max, "
                       "sql_vdbe_opcode_max, read_preference, ...).");
    throw ConnectionFailure(
        address,
        without_verbose_parts(message) +
            " (closed at startup without an answer: " + routing::kClosedAtStartupDetail + ")",
        false);
}

// A failed attempt to connect: an authentication error (not a topology problem: no worker
// wake-up, no retry elsewhere), a startup Picodata refused (closed_at_startup), or else a
// ConnectionFailure.
[[noreturn]] void connect_failed(PGconn *conn, const std::string &address,
                                 const ConnParams &params) {
    std::string message = libpq_message(PQerrorMessage(conn));
    if (int code = authentication_failure(conn, message)) {
        std::string user;
        for (const auto &[keyword, value] : params.options)
            if (keyword == "user")
                user = value;
        if (user.empty() && PQuser(conn) != nullptr)
            user = PQuser(conn);
        throw SqlError(code,
                       "picoroute: authentication failed for user \"" + user +
                           "\" at Picodata instance " + address,
                       server_message(message),
                       params.server_name.empty()
                           ? "Check the user and password of picoroute.conninfo."
                           : "Check the user mapping of server \"" + params.server_name + "\".");
    }
    if (routing::closed_at_startup(message))
        closed_at_startup(message, address, params);
    // Any other refusal no retry can cure (a database that does not exist, a bad startup
    // option) fails at once too, with the server's SQLSTATE, instead of being retried for
    // picoroute.failover_wait as an unreachable instance would be.
    std::string code = startup_sqlstate(message);
    if (routing::startup_refusal_is_final(code))
        throw SqlError(MAKE_SQLSTATE(code[0], code[1], code[2], code[3], code[4]),
                       "picoroute: Picodata instance " + address +
                           " refused the connection: " + server_message(message),
                       {},
                       params.server_name.empty()
                           ? "Check picoroute.conninfo."
                           : "Check the options of server \"" + params.server_name +
                                 "\" (dbname, options) and its user mapping.");
    throw ConnectionFailure(address, without_verbose_parts(message), false);
}

}  // namespace

PGconn *open_connection(const std::string &address, const ConnParams &params) {
    TcpAddress target = connect_target(address);
    std::string host = target.host, port = std::to_string(target.port);
    std::vector<const char *> keywords, values;
    for (const auto &[keyword, value] : params.options) {
        keywords.push_back(keyword.c_str());
        values.push_back(value.c_str());
    }
    keywords.push_back("host");
    values.push_back(host.c_str());
    keywords.push_back("port");
    values.push_back(port.c_str());
    keywords.push_back(nullptr);
    values.push_back(nullptr);

    TimestampTz deadline = deadline_in(setting_connect_timeout * 1000);
    ConnCloser closer{PQconnectStartParams(keywords.data(), values.data(), 0)};
    if (closer.conn == nullptr)
        throw std::bad_alloc();
    PQsetNoticeProcessor(closer.conn, ignore_notice, nullptr);
    // Verbose messages carry the server's SQLSTATE, to tell a failed login from a failed
    // connection.
    PQsetErrorVerbosity(closer.conn, PQERRORS_VERBOSE);
    if (PQstatus(closer.conn) == CONNECTION_BAD)
        throw ConnectionFailure(address, libpq_message(PQerrorMessage(closer.conn)), false);
    IoOutcome connected =
        finish_connect(Waiter{closer.conn, latch_checks_interrupts, deadline, nullptr});
    if (connected == IoOutcome::Failed)
        connect_failed(closer.conn, address, params);
    if (connected != IoOutcome::Done)
        throw ConnectionFailure(address,
                                "timeout after " + std::to_string(setting_connect_timeout) +
                                    " s (picoroute.connect_timeout) while connecting",
                                false);
    if (params.require_password && !PQconnectionUsedPassword(closer.conn))
        throw SqlError(ERRCODE_S_R_E_PROHIBITED_SQL_STATEMENT_ATTEMPTED,
                       "picoroute: password is required",
                       "Non-superusers must connect with a password that the Picodata instance "
                       "asks for (server \"" +
                           params.server_name + "\").",
                       "Add a password to the user mapping.");
    PQsetErrorVerbosity(closer.conn, PQERRORS_DEFAULT);
    if (PQsetnonblocking(closer.conn, 1) != 0)
        throw ConnectionFailure(address, libpq_message(PQerrorMessage(closer.conn)), false);
    PGconn *conn = closer.conn;
    closer.conn = nullptr;
    return conn;
}

ConnParams conninfo_params() {
    ConnParams params;
    params.userid = GetUserId();
    const char *conninfo = setting_conninfo ? setting_conninfo : "";
    char *error = nullptr;
    PQconninfoOption *options = PQconninfoParse(conninfo, &error);
    if (options == nullptr) {
        // libpq's message quotes the text around the problem, a password possibly: not shown.
        if (error)
            PQfreemem(error);
        throw SqlError(ERRCODE_INVALID_PARAMETER_VALUE, "picoroute.conninfo could not be parsed",
                       {},
                       "Write it as keyword=value pairs, quoting values that contain blanks or "
                       "quotes ('...'); prefer a password file (passfile) to a password in it.");
    }
    for (PQconninfoOption *o = options; o->keyword != nullptr; o++) {
        if (o->val == nullptr || o->val[0] == '\0')
            continue;
        std::string keyword = o->keyword;
        if (keyword == "host" || keyword == "hostaddr" || keyword == "port")
            continue;
        params.options.emplace_back(keyword, o->val);
    }
    PQconninfoFree(options);
    return params;
}

}  // namespace picoroute::pg::remote
