# shellcheck shell=bash
# tap.sh - TAP output for the shell tests (bash), sourced by tests/libvirt,
# tests/newstack and tests/deb: one place for the counters and the lines.
#
#   ok DESC / not_ok DESC       one result line (not_ok also counts a failure in nfail)
#   check DESC COMMAND...       one result line from COMMAND's status, its output on stderr
#                               (a script that wants it elsewhere defines its own check)
#   skip_all REASON             the whole script skipped: "1..0 # SKIP REASON", exit 0
#   bail REASON                 "Bail out! REASON", exit 1
#
# The caller prints the plan ("1..$ntest") at its end and exits non-zero when nfail > 0.

ntest=0
nfail=0
ok() {
    ntest=$((ntest + 1))
    echo "ok $ntest - $*"
}
not_ok() {
    ntest=$((ntest + 1))
    nfail=$((nfail + 1))
    echo "not ok $ntest - $*"
}
check() {
    local desc=$1
    shift
    if "$@" >&2; then
        ok "$desc"
    else
        not_ok "$desc"
    fi
}
skip_all() {
    echo "1..0 # SKIP $*"
    exit 0
}
bail() {
    echo "Bail out! $*"
    exit 1
}
