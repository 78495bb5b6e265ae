# The models after the last migration (the migrations are written by hand, in
# the form makemigrations writes them).
from django.db import models

from .fields import FencingTokenField


class Fenced(models.Model):
    id = models.BigAutoField(primary_key=True)
    v = models.BigIntegerField(null=True)
    fence = FencingTokenField(null=True)

    class Meta:
        abstract = True


class Acct(Fenced):  # row scope
    class Meta:
        db_table = "dj_row"


class Ledger(Fenced):  # table scope
    class Meta:
        db_table = "dj_tab"


class Order(Fenced):  # resource scope
    shard = models.TextField()

    class Meta:
        db_table = "dj_res"
