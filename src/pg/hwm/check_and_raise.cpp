// The check-and-raise entries of the HWM store (pg/hwm/store.hpp): the direct
// path when it settles the write, else the SPI path.
#include "pg/hwm/store.hpp"

#include "pg/hwm/durability.hpp"
#include "pg/hwm/lock.hpp"
#include "pg/hwm/raise_paths.hpp"
#include "pg/hwm/store_sql.hpp"
#include "pg/keys/resource_key.hpp"

extern "C" {
#include "utils/builtins.h"
}

namespace fencing::pg {
namespace hwm {

bool RaisedHere(const SharedHwm &h, Token token) {
    return pg::RaisedHere(h.kind, h.relid, h.identity, h.identity_len, token);
}

bool Admitted(const SharedHwm &h, Token offered, Token hwm, bool strict) {
    switch (JudgeOffer(offered, hwm, strict)) {
        case Admission::kAdmitted:
            return true;
        case Admission::kIfRaisedHere:
            return RaisedHere(h, offered);
        case Admission::kRefused:
            break;
    }
    return false;
}

void NoteRaise(const SharedHwm &h, Token token, bool strict) {
    NoteHwmRaised();
    if (strict)
        RecordRaise(h.kind, h.relid, h.identity, h.identity_len, token);
}

}  // namespace hwm

HwmVerdict CheckAndRaiseResource(const char *name_space, const char *resource, Token offered,
                                 bool strict) {
    // "<namespace>\0<resource>", on the stack when short (the common case:
    // one per row of a bulk statement).
    Size ns_len = strlen(name_space);
    Size identity_len = ns_len + 1 + strlen(resource);
    char short_identity[128];
    char *identity = identity_len < sizeof(short_identity)
                         ? short_identity
                         : static_cast<char *>(palloc(identity_len + 1));
    memcpy(identity, name_space, ns_len + 1);
    strcpy(identity + ns_len + 1, resource);
    Datum key[2];
    LOCKTAG tag;
    ResourceHwmLockTag(&tag, identity, identity_len);
    hwm::SharedHwm h = {HwmKind::kResource,    InvalidOid, identity, identity_len,
                        &hwm::resource_direct, &tag,       key,      name_space};
    // The rows of a bulk statement after the first: no key built.
    // A key admitted from memory was stored, so it is storable.
    if (hwm::AdmittedFromMemory(h, offered, strict))
        return {true, offered};
    RequireStorableResourceKey(name_space, resource);
    Datum ns = CStringGetTextDatum(name_space);
    Datum res = CStringGetTextDatum(resource);
    key[0] = ns;
    key[1] = res;
    HwmVerdict verdict;
    if (hwm::SettleDirect(h, offered, strict, &verdict))
        return verdict;
    Datum raise_args[] = {ns, res, Int64GetDatum(offered), BoolGetDatum(strict)};
    Datum read_args[] = {ns, res};
    Datum first_args[] = {ns, res, Int64GetDatum(offered)};
    InternalStatement *raise =
        StoreHasRaisedAt("resource_hwm") ? &hwm::resource_raise_stamped : &hwm::resource_raise;
    hwm::SpiRaise spi = {
        raise,      raise_args,         &hwm::resource_read, read_args, &hwm::resource_first,
        first_args, &hwm::resource_lock};
    return hwm::CheckAndRaiseViaSpi(h, spi, offered, strict);
}

HwmVerdict CheckAndRaiseTable(Oid home_relid, Token offered, bool strict) {
    Datum rel = ObjectIdGetDatum(home_relid);
    Datum key[] = {rel};
    LOCKTAG tag;
    TableHwmLockTag(&tag, home_relid);
    hwm::SharedHwm h = {HwmKind::kTable, home_relid, nullptr, 0, &hwm::table_direct, &tag, key};
    if (hwm::AdmittedFromMemory(h, offered, strict))
        return {true, offered};
    HwmVerdict verdict;
    if (hwm::SettleDirect(h, offered, strict, &verdict))
        return verdict;
    Datum raise_args[] = {rel, Int64GetDatum(offered), BoolGetDatum(strict)};
    Datum read_args[] = {rel};
    Datum first_args[] = {rel, Int64GetDatum(offered)};
    hwm::SpiRaise spi = {&hwm::table_raise, raise_args, &hwm::table_read, read_args,
                         &hwm::table_first, first_args, &hwm::table_lock};
    return hwm::CheckAndRaiseViaSpi(h, spi, offered, strict);
}

}  // namespace fencing::pg
