from django.db import models


class FencingTokenField(models.BigIntegerField):
    """A fencing_token column, as Python ints."""

    def db_type(self, connection):
        return "fencing_token"

    def from_db_value(self, value, expression, connection):
        return None if value is None else int(value)
