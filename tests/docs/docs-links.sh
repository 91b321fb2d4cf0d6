#!/bin/bash
# docs-links.sh SRCDIR - TAP: README.md stays a one-page README (at most 200 lines), and
# every relative link in README.md, docs/*.md and benchmarks/ (RESULTS.md, results/*.md)
# names a file or folder that exists.
src=$1
echo "1..2"
n=$(wc -l < "$src/README.md")
if [ "$n" -le 200 ]; then
    echo "ok 1 README.md is $n lines (at most 200)"
else
    echo "not ok 1 README.md is $n lines (at most 200)"
fi
bad=0
for f in "$src"/README.md "$src"/docs/*.md "$src"/benchmarks/RESULTS.md "$src"/benchmarks/results/*.md; do
    [ -f "$f" ] || continue
    d=$(dirname "$f")
    # ](target) of inline links; code spans cannot hold one on this project's pages
    while IFS= read -r t; do
        t=${t%%#*}
        case $t in "" | http://* | https://* | mailto:*) continue ;; esac
        if [ ! -e "$d/$t" ]; then
            echo "# ${f#"$src"/}: broken link to $t"
            bad=$((bad + 1))
        fi
    done < <(grep -o '](\([^)[:space:]]*\))' "$f" | sed 's/^](\(.*\))$/\1/')
done
if [ "$bad" = 0 ]; then
    echo "ok 2 every relative link in the docs resolves"
else
    echo "not ok 2 every relative link in the docs resolves ($bad broken)"
fi
