// GUCs: fencing.token (transparent mode) and fencing.auto_protect.
#include <cstdlib>

#include "pg/guc.hpp"

#include "pg/fenced_dml.hpp"
#include "pg/pg.hpp"

extern "C" {
#include "utils/guc.h"
}

namespace fencing::pg {

namespace {

char *token_setting = nullptr;
bool auto_protect_setting = true;
bool session_token_set = false;
bool session_token_valid = true;
Token session_token_value = 0;

// True while _PG_init defines the variables.
bool defining = false;

struct ParsedToken {
    bool valid;
    Token value;
};

// The parsed token travels from check to assign hook in GUC "extra" memory,
// which guc.c frees with free(): it must come from malloc.
//
// A value SET before this library was loaded lives in a placeholder and is
// re-applied while _PG_init defines the variable; a rejection then would only
// be a WARNING and leave the token unset, so an unfenced write could follow.
// Such a value is accepted but marked invalid, and every write that consults
// it fails (fail closed).
bool CheckToken(char **newval, void **extra, GucSource) {
    if (*newval == nullptr || **newval == '\0')
        return true;
    ParseResult parsed = ParseToken(*newval);
    if (parsed.status != ParseStatus::kOk && !defining) {
        GUC_check_errcode(parsed.status == ParseStatus::kOutOfRange
                              ? ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE
                              : ERRCODE_INVALID_TEXT_REPRESENTATION);
        GUC_check_errdetail(
            "fencing.token must be a fencing token: a decimal integer from 0 "
            "to 9223372036854775807 or 0x hex, or empty for none.");
        return false;
    }
    auto *value = static_cast<ParsedToken *>(std::malloc(sizeof(ParsedToken)));
    if (value == nullptr)
        return false;
    value->valid = parsed.status == ParseStatus::kOk;
    value->value = parsed.value;
    *extra = value;
    return true;
}

void AssignToken(const char *, void *extra) {
    auto *parsed = static_cast<ParsedToken *>(extra);
    session_token_set = parsed != nullptr;
    session_token_valid = parsed == nullptr || parsed->valid;
    session_token_value = parsed != nullptr ? parsed->value : 0;
}

}  // namespace

void DefineSettings() {
    defining = true;
    DefineCustomStringVariable(
        "fencing.token", "Fencing token carried by writes to protected tables.",
        "Use SET LOCAL so the token ends with the transaction. Empty means no token.",
        &token_setting, "", PGC_USERSET, GUC_NOT_IN_SAMPLE, CheckToken, AssignToken, nullptr);
    DefineCustomBoolVariable(
        "fencing.auto_protect", "Protect every table that declares a fencing_token column.",
        nullptr, &auto_protect_setting, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    defining = false;
}

bool SessionToken(Oid home_relid, Token *out) {
    if (FencedDmlToken(home_relid, out))
        return true;
    if (!session_token_valid)
        ereport(ERROR,
                (errcode(ERRCODE_INVALID_TEXT_REPRESENTATION),
                 errmsg("invalid value for parameter \"fencing.token\": \"%s\"", token_setting),
                 errdetail("It was set before the fencing library was loaded."),
                 errhint("SET LOCAL fencing.token to a valid token, or RESET it.")));
    *out = session_token_value;
    return session_token_set;
}

bool AutoProtectEnabled() {
    return auto_protect_setting;
}

}  // namespace fencing::pg
