from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("shop", "0005_renamefield")]
    operations = [
        migrations.RemoveField(model, "memo") for model in ("acct", "ledger", "order")
    ] + [
        migrations.RemoveField(model, "flag") for model in ("acct", "ledger", "order")
    ]
