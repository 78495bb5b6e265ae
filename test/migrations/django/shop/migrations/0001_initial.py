from django.db import migrations, models

import shop.fields


def fields():
    return [("id", models.AutoField(primary_key=True, serialize=False)),
            ("v", models.BigIntegerField(null=True)),
            ("fence", shop.fields.FencingTokenField(null=True))]


class Migration(migrations.Migration):
    initial = True
    dependencies = []
    operations = [
        # One fencing_token column: each table is fenced in row scope when created.
        migrations.CreateModel(name="Acct", fields=fields(), options={"db_table": "dj_row"}),
        migrations.CreateModel(name="Ledger", fields=fields(), options={"db_table": "dj_tab"}),
        migrations.CreateModel(
            name="Order",
            fields=fields()[:1] + [("shard", models.TextField())] + fields()[1:],
            options={"db_table": "dj_res"}),
        migrations.RunSQL(
            "SELECT fencing_protect('dj_tab', scope => 'table');"
            "SELECT fencing_protect('dj_res', scope => 'resource', resource_column => 'shard',"
            " resource_namespace => 'mig_' || current_database());",
            migrations.RunSQL.noop),
    ]
