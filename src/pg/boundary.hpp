// The C++/PostgreSQL boundary.
//
// Two rules, one mechanism:
//  * a C++ exception must never unwind through PostgreSQL frames, and
//  * a PostgreSQL error (a longjmp) must never skip a C++ destructor.
//
// Every SQL-callable function is declared with FENCING_FUNCTION. Its body runs
// inside RunGuarded: an exception is caught, its message and SQLSTATE are copied
// into plain buffers, the catch block is left (so the exception object is
// destroyed), and only then is ereport called. Bodies are written in C style:
// they keep no object with a non-trivial destructor alive across a call that
// can ereport, so a longjmp out of them skips nothing.
#pragma once

#include <cstring>
#include <exception>
#include <new>

#include "pg/pg.hpp"

namespace fencing::pg {

// An error raised from C++ code that knows its SQLSTATE.
class Error : public std::exception {
  public:
    Error(int sqlstate, const char *message) noexcept : sqlstate_(sqlstate) {
        std::strncpy(message_, message, sizeof(message_) - 1);
        message_[sizeof(message_) - 1] = '\0';
    }
    const char *what() const noexcept override { return message_; }
    int sqlstate() const noexcept { return sqlstate_; }

  private:
    int sqlstate_;
    char message_[256];
};

template <typename Body>
inline Datum RunGuarded(FunctionCallInfo fcinfo, Body body) {
    int sqlstate;
    char message[256];
    try {
        return body(fcinfo);
    } catch (const Error &e) {
        sqlstate = e.sqlstate();
        std::strncpy(message, e.what(), sizeof(message) - 1);
    } catch (const std::bad_alloc &) {
        sqlstate = ERRCODE_OUT_OF_MEMORY;
        std::strncpy(message, "out of memory in fencing extension", sizeof(message) - 1);
    } catch (const std::exception &e) {
        sqlstate = ERRCODE_EXTERNAL_ROUTINE_EXCEPTION;
        std::strncpy(message, e.what(), sizeof(message) - 1);
    } catch (...) {
        sqlstate = ERRCODE_EXTERNAL_ROUTINE_EXCEPTION;
        std::strncpy(message, "unknown C++ exception in fencing extension", sizeof(message) - 1);
    }
    message[sizeof(message) - 1] = '\0';
    // The exception object is gone; it is now safe to longjmp.
    ereport(ERROR, (errcode(sqlstate), errmsg("%s", message)));
    pg_unreachable();
}

}  // namespace fencing::pg

// Declares an SQL-callable, exception-guarded function:
//   FENCING_FUNCTION(fencing_token_in) { ... return SomeDatum; }
#define FENCING_FUNCTION(name)                               \
    extern "C" {                                             \
    PG_FUNCTION_INFO_V1(name);                               \
    }                                                        \
    static Datum name##_body(FunctionCallInfo fcinfo);       \
    extern "C" Datum name(PG_FUNCTION_ARGS) {                \
        return fencing::pg::RunGuarded(fcinfo, name##_body); \
    }                                                        \
    static Datum name##_body(FunctionCallInfo fcinfo)
