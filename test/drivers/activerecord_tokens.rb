#!/usr/bin/ruby
# ActiveRecord (Debian's ruby-activerecord and ruby-pg) against a fenced table:
# what works, what to register and what to avoid, each as a check that can
# fail. Prints "ok N - ..." / "not ok N - ..." lines.
#
#   * the session token (BEGIN; SET LOCAL fencing.token) fences an unchanged
#     save, and a stale holder's save is refused with TF001;
#   * lock_version (optimistic locking) works beside the token column;
#   * partial_writes = false writes every column back: a holder's second save
#     echoes a token column value that is no longer the stored one, which is
#     refused with 22023; attr_readonly :fence keeps the column out of
#     UPDATE and the second save goes through.
#
# Connection from the libpq environment (PGHOST, PGPORT, PGUSER, PGDATABASE).
require "active_record"

$results = []

def check(name, expected, actual)
  ok = expected == actual
  $results << ok
  line = "#{ok ? 'ok' : 'not ok'} #{$results.size} - #{name}"
  line += ": expected #{expected.inspect}, got #{actual.inspect}" unless ok
  puts line
end

def sqlstate
  yield
  "00000"
rescue ActiveRecord::StatementInvalid => e
  e.cause.respond_to?(:result) && e.cause.result ? e.cause.result.error_field(PG::PG_DIAG_SQLSTATE) : e.class.name
end

ActiveRecord::Base.establish_connection(
  adapter: "postgresql", host: ENV["PGHOST"], port: ENV["PGPORT"],
  username: ENV["PGUSER"], database: ENV["PGDATABASE"]
)
conn = ActiveRecord::Base.connection
conn.execute("CREATE EXTENSION IF NOT EXISTS fencing")
conn.execute("DROP TABLE IF EXISTS ar_jobs, ar_locked")
conn.execute("CREATE TABLE ar_jobs (id int PRIMARY KEY, state text, fence fencing_token)")
conn.execute("CREATE TABLE ar_locked (id int PRIMARY KEY, state text, lock_version int NOT NULL DEFAULT 0, fence fencing_token)")
conn.execute("INSERT INTO ar_jobs VALUES (1, 'new', 10), (2, 'new', 10)")
conn.execute("INSERT INTO ar_locked VALUES (1, 'new', 0, 10)")

def under_token(token)
  ActiveRecord::Base.transaction do
    ActiveRecord::Base.connection.execute("SET LOCAL fencing.token = #{Integer(token)}")
    yield
  end
end

# The token column as an Integer attribute: ActiveRecord does not know the
# type's OID (it warns once and would treat the value as a String).
class Job < ActiveRecord::Base
  self.table_name = "ar_jobs"
  attribute :fence, :integer
end

class LockedJob < ActiveRecord::Base
  self.table_name = "ar_locked"
end

# The default (partial_writes = true): UPDATE names only changed columns.
job = Job.find(1)
check("a save under the holder's session token", "00000",
      sqlstate { under_token(20) { job.update!(state: "running") } })
check("the save raised the row's token", 20, Job.connection.select_value("SELECT fence::bigint FROM ar_jobs WHERE id = 1"))
check("the token column reads as an Integer", Integer, job.fence.class)
check("the holder's second save", "00000", sqlstate { under_token(20) { job.update!(state: "done") } })
stale = Job.find(1)
check("a stale holder's save is refused with TF001", "TF001",
      sqlstate { under_token(15) { stale.update!(state: "overwritten") } })
check("the stale save changed nothing", "done", Job.find(1).state)
check("a save without a token is refused with TF002", "TF002",
      sqlstate { Job.find(1).update!(state: "untokened") })

# Optimistic locking beside the token column.
locked = LockedJob.find(1)
check("lock_version: a save under the token", "00000", sqlstate { under_token(30) { locked.update!(state: "running") } })
check("lock_version advanced", 1, LockedJob.find(1).lock_version)
first = LockedJob.find(1)
second = LockedJob.find(1)
under_token(30) { first.update!(state: "done") }
check("lock_version: an object read before another save is refused by ActiveRecord",
      "ActiveRecord::StaleObjectError",
      begin
        under_token(30) { second.update!(state: "overwritten") }
        "saved"
      rescue ActiveRecord::StaleObjectError => e
        e.class.name
      end)

# partial_writes = false: every column is written back, the token column too.
class FullJob < ActiveRecord::Base
  self.table_name = "ar_jobs"
  self.partial_updates = false if respond_to?(:partial_updates=)
  self.partial_writes = false if respond_to?(:partial_writes=)
end
full = FullJob.find(2)
check("partial_writes = false: the first save (an echo of the stored token)", "00000",
      sqlstate { under_token(40) { full.update!(state: "running") } })
check("partial_writes = false: the second save echoes a stale value: 22023", "22023",
      sqlstate { under_token(40) { full.update!(state: "done") } })

class ReadonlyFenceJob < ActiveRecord::Base
  self.table_name = "ar_jobs"
  self.partial_updates = false if respond_to?(:partial_updates=)
  self.partial_writes = false if respond_to?(:partial_writes=)
  attr_readonly :fence
end
ro = ReadonlyFenceJob.find(2)
check("attr_readonly :fence: first save", "00000", sqlstate { under_token(50) { ro.update!(state: "running") } })
check("attr_readonly :fence: second save", "00000", sqlstate { under_token(50) { ro.update!(state: "done") } })
check("attr_readonly :fence: the row carries the session token", 50,
      Job.connection.select_value("SELECT fence::bigint FROM ar_jobs WHERE id = 2"))
check("attr_readonly :fence: a stale holder is still refused", "TF001",
      sqlstate { under_token(45) { ReadonlyFenceJob.find(2).update!(state: "late") } })

conn.execute("DROP TABLE ar_jobs, ar_locked")
failed = $results.count(false)
puts "# #{$results.size - failed} passed, #{failed} failed"
exit(failed.zero? ? 0 : 1)
