from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("shop", "0003_backfill")]
    operations = [
        migrations.AlterField(model, "note", models.TextField(null=True))
        for model in ("acct", "ledger", "order")
    ]
