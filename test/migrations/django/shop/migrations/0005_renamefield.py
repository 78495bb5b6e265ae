from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("shop", "0004_alterfield")]
    operations = [
        migrations.RenameField(model, "note", "memo") for model in ("acct", "ledger", "order")
    ]
