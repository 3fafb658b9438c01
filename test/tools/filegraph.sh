#!/usr/bin/env bash
# filegraph.sh: the file graphs of src/ and cuda/, and a check that neither
# has a cycle (docs/architecture.md, "Layers").
#
#     bash test/tools/filegraph.sh [--print]
#
# 1. Includes: every #include "x.h" of a file under src/ or cuda/ is an edge
#    from that file to x.h (found in src/, src/engine/ or cuda/).
# 2. Calls, where the objects are built (src/*.o, src/engine/*.o): an edge
#    from a.c to b.c when a.o refers to a function that b.o defines.  Taking
#    a function's address for a const method table counts as well, so such
#    a table lives in the file that owns the functions, and callers reach it
#    through a data symbol (which is no edge).
# A graph with a cycle fails (exit 1), naming the files of the loop (tsort).
# --print also lists the edges.  Cheap: text and `nm` only.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$root"
print=0
[[ ${1:-} == --print ]] && print=1
status=0

# check NAME: read "from to" edges on stdin, fail on a cycle
check() {
	local name=$1 edges out
	edges=$(cat)
	((print)) && printf '%s\n' "$edges" | sed "s/^/$name: /"
	if ! out=$(printf '%s\n' "$edges" | tsort 2>&1 >/dev/null) || [[ -n $out ]]; then
		echo "filegraph: $name graph has a cycle:"
		printf '%s\n' "$out" | grep -v 'input contains a loop' | sed 's/^tsort: /  /'
		status=1
	else
		echo "filegraph: $name graph: $(printf '%s\n' "$edges" | grep -c .) edges, no cycle"
	fi
}

# includes: "file header" edges
include_edges() {
	local f inc dir
	for f in src/*.[ch] src/engine/*.[ch] cuda/*.c cuda/*.cu cuda/*.h cuda/*.cuh; do
		[[ -f $f ]] || continue
		sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f" |
			while read -r inc; do
				for dir in "$(dirname "$f")" src src/engine cuda; do
					if [[ -f $dir/$inc ]]; then
						echo "$f $dir/$inc"
						break
					fi
				done
			done
	done | sort -u
}

# calls: "caller callee" edges, from the objects' symbols
call_edges() {
	nm -A "$@" 2>/dev/null | awk '
		{ split($1, p, ":"); file = p[1]; sub(/\.o$/, ".c", file) }
		NF == 3 && $2 == "T" { def[$3] = file }
		NF == 3 && $2 == "U" { use[file, $3] = 1 }
		END {
			for (k in use) {
				split(k, q, SUBSEP)
				if ((q[2] in def) && def[q[2]] != q[1])
					print q[1], def[q[2]]
			}
		}' | sort -u
}

check includes < <(include_edges)

objs=$(ls src/*.o src/engine/*.o 2>/dev/null)
if [[ -n $objs ]]; then
	check calls < <(call_edges $objs)
else
	echo "filegraph: no objects built, call graph not checked"
fi
exit $status
