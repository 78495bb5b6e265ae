module github.com/pgfencing/fencing/test/pooler/batches

go 1.26

require github.com/jackc/pgx/v5 v5.5.0
