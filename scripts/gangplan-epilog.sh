#!/bin/bash
# Slurm Epilog for the nodes gangplan manages: tells `gangplan slurm serve --listen HOST:PORT`
# that job $SLURM_JOB_ID ended on this node, and waits (at most GANGPLAN_EPILOG_WAIT seconds,
# default 2) until a round has planned the end. When the Epilog exits, slurmd reports it to the
# controller, which runs its scheduler at once and starts the jobs the round released on this
# node; without this, a released job starts at the controller's next one-second tick.
#
# Install (every managed node):  Epilog=/etc/slurm/gangplan-epilog.sh in slurm.conf, and next
# to the script a file gangplan-epilog.conf (or the file GANGPLAN_EPILOG_CONF names) with
#     GANGPLAN_LISTEN=planner-host:6830
#     GANGPLAN_EPILOG_WAIT=2
# A site that has its own Epilog calls this script from it. It always exits 0 (a failing
# Epilog drains the node): with serve down or unreachable, the node is handed back at once or
# after the wait. See docs/slurm.md, "End notices from the Epilog".
conf=${GANGPLAN_EPILOG_CONF:-${0%/*}/gangplan-epilog.conf}
listen='' wait_s=2
if [[ -r $conf ]]; then
    while IFS='=' read -r key value; do
        case $key in
            GANGPLAN_LISTEN) listen=$value ;;
            GANGPLAN_EPILOG_WAIT) [[ $value =~ ^[0-9]+$ ]] && wait_s=$value ;;
        esac
    done <"$conf"
fi
[[ $listen == *:* && ${SLURM_JOB_ID:-} =~ ^[0-9]+$ ]] || exit 0
# The connection, the line and the answer, all within the wait (plus a second to connect).
timeout "$((wait_s + 1))" bash -c '
    exec 3<>"/dev/tcp/${1%:*}/${1##*:}" || exit 0
    printf "ended %s\n" "$2" >&3
    read -r -t "$3" _ <&3
' gangplan-epilog "$listen" "$SLURM_JOB_ID" "$wait_s" 2>/dev/null
exit 0
