-- PostgreSQL 19 only: the module names itself and its version
-- (PG_MODULE_MAGIC_EXT, pg_get_loaded_modules()).
LOAD 'fencing';
SELECT module_name, version = (SELECT extversion FROM pg_extension WHERE extname = 'fencing') AS version_is_the_extensions
  FROM pg_get_loaded_modules() WHERE module_name = 'fencing';
