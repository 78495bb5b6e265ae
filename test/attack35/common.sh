# Sourced by the scenarios: the private cluster's env and helpers.
set -u
cd "$(dirname "$0")/../.."
source /work/wt/atk30.env
eval "$(bash test/cluster.sh env)"
q() { psql -XAtq -v ON_ERROR_STOP=1 "$@"; }
# Runs SQL in the background, output into $1.out
bg() { local name=$1; shift; psql -XAtq "$@" >"/tmp/atk35_$name.out" 2>&1 & }
# Commit-order log: writes acknowledged outside the fenced table (advances)
# go into atk_log (k, tok) in the same transaction. check_order TABLE KEYEXPR
# prints the acknowledged writes in commit order (track_commit_timestamp) and
# counts those whose token is below one committed earlier for the same key.
q -c "CREATE TABLE IF NOT EXISTS atk_log (k text, tok bigint, src text)" 2>/dev/null
check_order() {
    local tbl=$1 key=$2
    q <<SQL
WITH w AS (
  SELECT ($key)::text AS k, tok::text::bigint AS tok, COALESCE(pg_xact_commit_timestamp(xmin), '-infinity') AS ts FROM $tbl
  UNION ALL
  SELECT k, tok, COALESCE(pg_xact_commit_timestamp(xmin), '-infinity') FROM atk_log WHERE src = '$tbl'),
o AS (SELECT k, tok, ts, max(tok) OVER (PARTITION BY k ORDER BY ts, tok
        ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before FROM w)
SELECT 'ORDER $tbl: acknowledged', count(*), 'stale accepted', count(*) FILTER (WHERE tok < before) FROM o;
SQL
}
