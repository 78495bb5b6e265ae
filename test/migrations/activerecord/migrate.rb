#!/usr/bin/ruby
# ActiveRecord's migrator (Debian's ruby-activerecord 6.1, ruby-pg), as
# `rails db:migrate VERSION=N` runs it: ruby migrate.rb VERSION migrates the
# database of the libpq environment up to db/migrate/VERSION_*.rb, each
# migration in its own transaction, recorded in schema_migrations.
require "active_record"

ActiveRecord::Base.establish_connection(
  adapter: "postgresql", host: ENV["PGHOST"], port: ENV["PGPORT"],
  username: ENV["PGUSER"], database: ENV["PGDATABASE"]
)
ActiveRecord::Migration.verbose = false
ActiveRecord::Migrator.migrations_paths = [File.join(__dir__, "db", "migrate")]
ActiveRecord::Base.connection.migration_context.up(Integer(ARGV.fetch(0)))
