#!/usr/bin/env bash
# nginx following the store live: policies added, changed and deleted and
# bans lifted take effect within 100 ms, without a reload (a raised rate
# gives a refused key room at once); `nginx -s reload`
# keeps the counters (they live in the shm's state file); with the shm gone
# requests pass (logged once), and enforcement resumes when it is back. Real
# nginx serving files; stopped by its pid on exit.
. "$(dirname "$0")/lib.sh"
fc_nginx_suite
d=/tmp/fc-it-$tag

fc policy add 1 --match 'uid=u1' --rate 3/m >/dev/null
fc ban add uid=evil >/dev/null
FC_NGX_WORKERS=2 fc_nginx_start "127.0.0.1:$(fc_port)" || skip_all "nginx did not start"

check "uid=u1 3/m: 3 then refused" [ "$(codes 4 '/?uid=u1')" = "200 200 200 429" ]
fc policy add 5 --match 'uid=u5' --rate 1/m >/dev/null
check "policy added: enforced within 100 ms" status_within_100ms 429 "/?uid=u5"
fc policy set 5 --match 'uid=u5' --rate 1/m --burst 5 >/dev/null
check "limits changed: more room within 100 ms, state kept" status_within_100ms 200 "/?uid=u5"
fc policy del 5 >/dev/null
check "policy deleted: passes within 100 ms" status_within_100ms 200 "/?uid=u5"
check "deleted policy: stays passing" [ "$(codes 5 '/?uid=u5')" = "200 200 200 200 200" ]
fc ban del uid=evil >/dev/null
check "ban lifted within 100 ms" status_within_100ms 200 "/?uid=evil"

# A reload keeps the counters: the shm outlives the workers.
fc_nginx_reload
check "after nginx -s reload: uid=u1 still limited" [ "$(codes 2 '/?uid=u1')" = "429 429" ]

# The shm removed: requests pass (logged once); back: enforced again.
mv "$shm" "$shm.away"
sleep 1.2
check "shm removed: fail open" [ "$(codes 3 '/?uid=u1')" = "200 200 200" ]
check "shm removed: logged" grep -q "is missing: requests pass" "$d/logs/error.log"
mv "$shm.away" "$shm"
sleep 1.2
check "shm back: enforced again" [ "$(codes 1 '/?uid=u1')" = "429" ]
# A rate raised gives a refused key room at once (freqctl-policy(7),
# CHANGING POLICIES): 3 used of 3/m are 3 of 10 at 10/m, so 7 more pass now,
# not 6 s from now (its TAT was 60 s ahead, more than 10/m's burst holds).
fc policy add 7 --match 'uid=*' --rate 3/m >/dev/null
check "uid=* 3/m: key k7 refused after 3" [ "$(codes 4 '/?uid=k7')" = "200 200 200 429" ]
fc policy set 7 --match 'uid=*' --rate 10/m >/dev/null
check "raised to 10/m: the refused key passes at once" status_within_100ms 200 "/?uid=k7"
check "raised to 10/m: 7 in all, then refused" [ "$(codes 7 '/?uid=k7')" = "200 200 200 200 200 200 429" ]
check "no worker crashed" sh -c "! grep -q 'exited on signal' '$d/logs/error.log'"
exit 0
