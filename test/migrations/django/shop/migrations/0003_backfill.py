import os

from django.db import migrations

# A data migration on fenced tables that require a token. As first written it
# updates the new column without a token: refused with TF002. The documented
# way through (MIG_BACKFILL_ALLOW_UNFENCED=1 here, the line a team adds):
# fencing_allow_unfenced() for this migration's transaction, then the backfill,
# which writes only the new column, in batches of 3 rows.


def backfill(apps, schema_editor):
    if os.environ.get("MIG_BACKFILL_ALLOW_UNFENCED"):
        with schema_editor.connection.cursor() as cur:
            for table in ("dj_row", "dj_tab", "dj_res"):
                cur.execute("SELECT fencing_allow_unfenced(%s, 'django backfill 0003')", [table])
    for name in ("Acct", "Ledger", "Order"):
        model = apps.get_model("shop", name)
        ids = list(model.objects.filter(note__isnull=True).values_list("id", flat=True))
        for start in range(0, len(ids), 3):
            model.objects.filter(id__in=ids[start:start + 3]).update(note="backfilled")


class Migration(migrations.Migration):
    dependencies = [("shop", "0002_addfield")]
    operations = [migrations.RunPython(backfill, migrations.RunPython.noop)]
