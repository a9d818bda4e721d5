// Conversion of C++ exceptions into PostgreSQL errors (see guard.h).
#include "pg/guard.h"

extern "C" {
#include "utils/errcodes.h"
}

#include <cstring>

namespace picoroute::pg {

int sqlstate_for(ErrorKind kind) {
    switch (kind) {
        case ErrorKind::InvalidInput:
            return ERRCODE_INVALID_PARAMETER_VALUE;
        case ErrorKind::InvalidCatalog:
            return ERRCODE_DATA_EXCEPTION;
        case ErrorKind::CapacityExceeded:
            return ERRCODE_CONFIGURATION_LIMIT_EXCEEDED;
        case ErrorKind::OutOfRange:
            return ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE;
        case ErrorKind::UnsupportedType:
            return ERRCODE_DATATYPE_MISMATCH;
    }
    return ERRCODE_INTERNAL_ERROR;
}

static void copy_text(char *dest, size_t size, const char *src) noexcept {
    if (src == nullptr) {
        dest[0] = '\0';
        return;
    }
    strlcpy(dest, src, size);
}

void capture_current_exception(PendingError &out) noexcept {
    out.sqlstate = ERRCODE_INTERNAL_ERROR;
    out.pg = nullptr;
    out.message[0] = out.detail[0] = out.hint[0] = '\0';
    try {
        throw;
    } catch (const PgError &e) {
        out.pg = e.data();
    } catch (const SqlError &e) {
        out.sqlstate = e.sqlstate();
        copy_text(out.message, sizeof(out.message), e.what());
        copy_text(out.detail, sizeof(out.detail), e.detail().c_str());
        copy_text(out.hint, sizeof(out.hint), e.hint().c_str());
    } catch (const Error &e) {
        out.sqlstate = sqlstate_for(e.kind());
        copy_text(out.message, sizeof(out.message), e.what());
        copy_text(out.hint, sizeof(out.hint), e.hint().c_str());
    } catch (const std::bad_alloc &) {
        out.sqlstate = ERRCODE_OUT_OF_MEMORY;
        copy_text(out.message, sizeof(out.message), "picoroute: out of memory");
    } catch (const std::exception &e) {
        out.sqlstate = ERRCODE_INTERNAL_ERROR;
        snprintf(out.message, sizeof(out.message), "picoroute: internal error: %s", e.what());
    } catch (...) {
        out.sqlstate = ERRCODE_INTERNAL_ERROR;
        copy_text(out.message, sizeof(out.message), "picoroute: unknown internal error");
    }
}

void raise_pending(const PendingError &error) {
    if (error.pg != nullptr)
        ReThrowError(error.pg);
    ereport(ERROR, (errcode(error.sqlstate), errmsg("%s", error.message),
                    error.detail[0] ? errdetail("%s", error.detail) : 0,
                    error.hint[0] ? errhint("%s", error.hint) : 0));
    pg_unreachable();
}

}  // namespace picoroute::pg
