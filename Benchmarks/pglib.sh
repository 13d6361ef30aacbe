# Shared by Benchmarks/journal-postgres.sh and Benchmarks/torture.sh: a PostgreSQL of the script's own, started as
# Tests/IngestTestSupport/PostgresServer.swift starts it (Debian's initdb in a temp folder, 127.0.0.1, a free port,
# fsync off unless FSYNC=on). Sourced, not run. The caller sets PGDIR (a temp folder it removes) and, at exit, stops
# PG_PID. start_postgres sets BIN, PORT and PG_PID, and defines psql (user ingest, database postgres).
start_postgres() {
    if [ -n "${INGEST_PG_BIN:-}" ]; then
        BIN="$INGEST_PG_BIN"
    else
        BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k4 -n | tail -1)"
    fi
    [ -x "$BIN/initdb" ] || { echo "PostgreSQL's initdb not found (apt install postgresql, or set INGEST_PG_BIN)" >&2; exit 1; }
    local as_user=() account fsync_flag=()
    if [ "$(id -u)" = 0 ]; then
        account=$(id postgres >/dev/null 2>&1 && echo postgres || echo nobody)
        chown "$account" "$PGDIR"
        as_user=(runuser -u "$account" --)
    fi
    PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    "${as_user[@]}" "$BIN/initdb" -D "$PGDIR/data" -U ingest -A trust --no-sync --no-instructions -E UTF8 \
        --locale=C.UTF-8 >"$PGDIR/initdb.log" 2>&1
    [ "${FSYNC:-off}" = on ] || fsync_flag=(-F)
    "${as_user[@]}" "$BIN/postgres" -D "$PGDIR/data" -h 127.0.0.1 -p "$PORT" -k "$PGDIR" "${fsync_flag[@]}" \
        -c max_connections=200 -c shared_buffers=16MB >"$PGDIR/postgres.log" 2>&1 &
    PG_PID=$!
    local _
    for _ in $(seq 100); do
        "$BIN/pg_isready" -q -h 127.0.0.1 -p "$PORT" && break
        sleep 0.1
    done
}
psql() { "$BIN/psql" -q -h 127.0.0.1 -p "$PORT" -U ingest -d postgres -v ON_ERROR_STOP=1 "$@"; }
