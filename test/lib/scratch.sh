# Shared by make demo and make examples: builds and installs the extension,
# then starts a scratch cluster on FENCING_PGPORT (default: the argument),
# exports its libpq environment, and stops and removes it when the shell
# exits. Source it from the repository root: scratch_cluster PORT
scratch_cluster() {
    local sudo=
    [ "$(id -u)" = 0 ] || sudo=sudo
    make -s >/dev/null
    $sudo make -s install >/dev/null
    export FENCING_PGPORT=${FENCING_PGPORT:-$1}
    test/cluster.sh stop
    trap 'test/cluster.sh stop' EXIT
    test/cluster.sh start
    eval "$(test/cluster.sh env)"
}
