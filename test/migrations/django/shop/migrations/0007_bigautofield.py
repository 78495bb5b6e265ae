from django.db import migrations, models

# int -> bigint primary keys (DEFAULT_AUTO_FIELD = BigAutoField): ALTER COLUMN
# id TYPE bigint on each table; the row-scope table has tombstones by now.


class Migration(migrations.Migration):
    dependencies = [("shop", "0006_removefield")]
    operations = [
        migrations.AlterField(model, "id", models.BigAutoField(primary_key=True, serialize=False))
        for model in ("acct", "ledger", "order")
    ]
