module github.com/pgfencing/fencing/clients/go

// The minimum versions this module needs: pgx v5.5.4 is the first with the
// fix for CVE-2024-27304. The tests run against Debian sid's pgx 5.9.2 and
// Go 1.26 (deps.sh), selected with -modfile, offline.
go 1.21

require github.com/jackc/pgx/v5 v5.5.4
