#!/bin/sh
# Every header carries its terms, so a header copied alone keeps them: an SPDX line
# first, and LICENSE's text, word for word, in its last comment.
status=0
for h in lf.h lf_reactor.h lf_bound.h bench/lf_conn.h bench/memc.h bench/redis.h; do
    head -1 "$h" | grep -q 'SPDX-License-Identifier: MIT' || { echo "$h: no SPDX line first"; status=1; }
    # the header's last comment, without its " * " margins, equals LICENSE
    awk '/^\/\*$/ { buf = ""; inc = 1; next }
         inc && /^ \*\/$/ { inc = 0; last = buf; next }
         inc { sub(/^ \* ?/, ""); buf = buf $0 "\n" }
         END { printf "%s", last }' "$h" > "${TMPDIR:-/tmp}/lf-licence.$$"
    if ! printf '%s\n' "$(cat LICENSE)" | cmp -s - "${TMPDIR:-/tmp}/lf-licence.$$"; then
        echo "$h: its last comment is not LICENSE's text"; status=1
    fi
    rm -f "${TMPDIR:-/tmp}/lf-licence.$$"
done
exit $status
