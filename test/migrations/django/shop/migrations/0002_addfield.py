from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [("shop", "0001_initial")]
    operations = [
        migrations.AddField(model, "note", models.CharField(max_length=40, null=True))
        for model in ("acct", "ledger", "order")
    ] + [
        migrations.AddField(model, "flag", models.IntegerField(default=1, null=True))
        for model in ("acct", "ledger", "order")
    ]
