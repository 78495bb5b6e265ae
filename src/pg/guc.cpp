// GUCs: fencing.token (transparent mode) and fencing.auto_protect.
#include <cstdlib>

#include "pg/guc.hpp"
#include "pg/pg.hpp"

extern "C" {
#include "utils/guc.h"
}

namespace fencing::pg {

int fenced_dml_depth = 0;
Token fenced_dml_token = 0;

namespace {

char *token_setting = nullptr;
bool auto_protect_setting = true;
bool session_token_set = false;
Token session_token_value = 0;

// The parsed token travels from check to assign hook in GUC "extra" memory,
// which guc.c frees with free(): it must come from malloc.
bool CheckToken(char **newval, void **extra, GucSource) {
    if (*newval == nullptr || **newval == '\0')
        return true;
    ParseResult parsed = ParseToken(*newval);
    if (parsed.status != ParseStatus::kOk) {
        GUC_check_errcode(parsed.status == ParseStatus::kOutOfRange
                              ? ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE
                              : ERRCODE_INVALID_TEXT_REPRESENTATION);
        GUC_check_errdetail(
            "fencing.token must be a fencing token: a decimal integer from 0 "
            "to 9223372036854775807 or 0x hex, or empty for none.");
        return false;
    }
    Token *value = static_cast<Token *>(std::malloc(sizeof(Token)));
    if (value == nullptr)
        return false;
    *value = parsed.value;
    *extra = value;
    return true;
}

void AssignToken(const char *, void *extra) {
    session_token_set = extra != nullptr;
    session_token_value = extra != nullptr ? *static_cast<Token *>(extra) : 0;
}

}  // namespace

void DefineSettings() {
    DefineCustomStringVariable(
        "fencing.token", "Fencing token carried by writes to protected tables.",
        "Use SET LOCAL so the token ends with the transaction. Empty means no token.",
        &token_setting, "", PGC_USERSET, GUC_NOT_IN_SAMPLE, CheckToken, AssignToken, nullptr);
    DefineCustomBoolVariable(
        "fencing.auto_protect", "Protect every table that declares a fencing_token column.",
        nullptr, &auto_protect_setting, true, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    MarkGUCPrefixReserved("fencing");
}

bool SessionToken(Token *out) {
    if (fenced_dml_depth > 0) {
        *out = fenced_dml_token;
        return true;
    }
    *out = session_token_value;
    return session_token_set;
}

bool AutoProtectEnabled() {
    return auto_protect_setting;
}

}  // namespace fencing::pg
