import os

SECRET_KEY = "test-only"
INSTALLED_APPS = ["shop"]
DATABASES = {"default": {
    "ENGINE": "django.db.backends.postgresql",
    "NAME": os.environ.get("PGDATABASE", "postgres"),
    "USER": os.environ.get("PGUSER", ""),
    "HOST": os.environ.get("PGHOST", ""),
    "PORT": os.environ.get("PGPORT", ""),
}}
DEFAULT_AUTO_FIELD = "django.db.models.AutoField"
USE_TZ = True
