#include "pg/api/lease_row.hpp"

#include "pg/base/compat.hpp"
#include "pg/base/internal_access.hpp"

extern "C" {
#include "access/genam.h"
#include "access/table.h"
#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
}

namespace fencing::pg {

TransactionId LeaseRowWriter(const char *name_space, const char *resource) {
    Oid schema = ExtensionSchemaOid(false);
    Oid relid = get_relname_relid("lease", schema);
    if (!OidIsValid(relid))
        return InvalidTransactionId;
    Relation rel = table_open(relid, AccessShareLock);
    Oid index = PrimaryKeyIndex(rel);
    TransactionId writer = InvalidTransactionId;
    if (OidIsValid(index)) {
        ScanKeyData keys[2];
        ScanKeyInit(&keys[0], 1, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(name_space));
        ScanKeyInit(&keys[1], 2, BTEqualStrategyNumber, F_TEXTEQ, CStringGetTextDatum(resource));
        keys[0].sk_collation = TupleDescAttr(RelationGetDescr(rel), 0)->attcollation;
        keys[1].sk_collation = TupleDescAttr(RelationGetDescr(rel), 1)->attcollation;
        SnapshotData dirty;
        InitDirtySnapshot(dirty);
        SysScanDesc scan = systable_beginscan(rel, index, true, &dirty, 2, keys);
        while (!TransactionIdIsValid(writer) && HeapTupleIsValid(systable_getnext(scan))) {
            TransactionId xid = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
            if (TransactionIdIsValid(xid) && !TransactionIdIsCurrentTransactionId(xid))
                writer = xid;
        }
        systable_endscan(scan);
    }
    table_close(rel, AccessShareLock);
    return writer;
}

}  // namespace fencing::pg
