#!/usr/bin/python3
"""The Django project of the migrations suite: `manage.py migrate shop NNNN`
against the database of the libpq environment (PGHOST, PGPORT, PGDATABASE)."""
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
