#!/usr/bin/env bash
# ctest example.io.http_server: drives examples/io/http_server with the real
# curl client (Debian package curl; scripts/setup-deps.sh installs it).
#
#   http_server_test.sh PATH/TO/http_server
#
# Starts the server on a fresh directory with --requests N and port 0, checks
# a file body byte for byte, HEAD, 404, 405, a path traversal (--path-as-is),
# keep-alive (two URLs over one connection), then waits for the server to
# exit by itself after the N-th response. Then graceful shutdown on SIGTERM,
# with two more servers: (a) an idle keep-alive connection is closed (EOF)
# and the server exits 0 within grace + 2 s; (b) a slow client that sent half
# a request head is cut off at the --grace 300 deadline and the server exits
# 0 soon after. Everything is bounded in time. A missing curl is a failure,
# not a skip.
set -euo pipefail

server_bin=${1:?usage: http_server_test.sh PATH/TO/http_server}
fail() { echo "FAIL: $*" >&2; exit 1; }

command -v curl >/dev/null 2>&1 ||
  fail "curl not found: this test needs the curl client (Debian package curl; run scripts/setup-deps.sh)"

work=$(mktemp -d)
server_pid=
cleanup() {
  if [[ -n $server_pid ]] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

root=$work/root
mkdir -p "$root/sub"
printf '<h1>hello</h1>\n' > "$root/index.html"
printf 'plain text\n' > "$root/sub/note.txt"
head -c 300000 /dev/urandom > "$root/data.bin"    # several 64 KiB pieces
printf 'top secret\n' > "$work/secret.txt"         # outside the root

# Responses this script asks for (the server exits after the last one).
requests=9
# Starts "$server_bin" "$root" 0 "$@" in the background: sets server_pid, port.
start_server() {
  : > "$work/port"
  "$server_bin" "$root" 0 "$@" > "$work/port" 2> "$work/server.log" &
  server_pid=$!
  port=
  for _ in $(seq 100); do                          # up to 10 s to start
    port=$(head -n 1 "$work/port" 2>/dev/null || true)
    [[ -n $port ]] && break
    kill -0 "$server_pid" 2>/dev/null || fail "the server exited at start: $(cat "$work/server.log")"
    sleep 0.1
  done
  [[ $port =~ ^[0-9]+$ ]] || fail "no port printed by the server (got '$port')"
}
start_server --requests "$requests"
base=http://127.0.0.1:$port
c=(curl --silent --show-error --max-time 10)

# 1. A file's body, byte for byte, and its headers.
"${c[@]}" -o "$work/got.bin" -D "$work/h1" "$base/data.bin" || fail "GET /data.bin"
cmp -s "$root/data.bin" "$work/got.bin" || fail "GET /data.bin: the body differs from the file"
grep -qi '^content-length: 300000' "$work/h1" || fail "GET /data.bin: Content-Length: $(cat "$work/h1")"
grep -qi '^content-type: application/octet-stream' "$work/h1" || fail "GET /data.bin: Content-Type"

# 2. HEAD: the headers of a GET, no body.
"${c[@]}" -I -o "$work/h2" "$base/sub/note.txt" || fail "HEAD /sub/note.txt"
grep -q '^HTTP/1.1 200' "$work/h2" || fail "HEAD: $(head -1 "$work/h2")"
grep -qi '^content-length: 11' "$work/h2" || fail "HEAD: Content-Length: $(cat "$work/h2")"
grep -qi '^content-type: text/plain' "$work/h2" || fail "HEAD: Content-Type"

# 3. 404.
code=$("${c[@]}" -o /dev/null -w '%{http_code}' "$base/no-such-file") || fail "GET /no-such-file"
[[ $code == 404 ]] || fail "GET /no-such-file: status $code, not 404"

# 4. Path traversal: the literal /../ reaches the server (--path-as-is).
code=$("${c[@]}" --path-as-is -o "$work/trav" -w '%{http_code}' "$base/../secret.txt") ||
  fail "GET /../secret.txt"
[[ $code == 400 ]] || fail "GET /../secret.txt: status $code, not 400"
! grep -q secret "$work/trav" || fail "GET /../secret.txt leaked the file"

# 5. 405 for another method.
code=$("${c[@]}" -X DELETE -o /dev/null -w '%{http_code}' "$base/index.html") || fail "DELETE"
[[ $code == 405 ]] || fail "DELETE /index.html: status $code, not 405"

# 6. Keep-alive: two URLs in one curl run share one connection.
"${c[@]}" -v -o "$work/k1" -o "$work/k2" -w '%{num_connects}\n' "$base/" "$base/sub/note.txt" \
  > "$work/connects" 2> "$work/verbose" || fail "keep-alive run: $(cat "$work/verbose")"
grep -q 'Re-using existing connection' "$work/verbose" ||
  fail "keep-alive: curl opened a new connection for the second URL: $(cat "$work/verbose")"
[[ $(tr -d '\n' < "$work/connects") == 10 ]] ||
  fail "keep-alive: num_connects per URL were $(tr '\n' ' ' < "$work/connects"), not 1 0"
cmp -s "$root/index.html" "$work/k1" || fail "keep-alive: GET / is not index.html"
cmp -s "$root/sub/note.txt" "$work/k2" || fail "keep-alive: second body differs"

# 7. A request head over 8 KiB: 413.
big=$(head -c 9000 /dev/zero | tr '\0' a)
code=$("${c[@]}" -H "X-Big: $big" -o /dev/null -w '%{http_code}' "$base/index.html") || fail "big head"
[[ $code == 413 ]] || fail "a 9000-byte header: status $code, not 413"

# 8. The last response: Connection: close honoured, and the server stops.
"${c[@]}" -H 'Connection: close' -o /dev/null -D "$work/h7" "$base/index.html" || fail "last GET"
grep -qi '^connection: close' "$work/h7" || fail "Connection: close not answered in kind"

for _ in $(seq 100); do                            # up to 10 s to exit
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if kill -0 "$server_pid" 2>/dev/null; then
  fail "the server did not exit after $requests responses: $(cat "$work/server.log")"
fi
status=0
wait "$server_pid" || status=$?
server_pid=
[[ $status == 0 ]] || fail "the server exited with status $status: $(cat "$work/server.log")"
first_log=$(cat "$work/server.log")

now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Waits up to $1 ms for the server to exit; sets status (its exit status)
# and elapsed (ms since $2). Fails if it is still running.
wait_exit() {
  local limit=$1 since=$2
  while kill -0 "$server_pid" 2>/dev/null; do
    (( $(now_ms) - since < limit )) || fail "the server still runs ${limit} ms after SIGTERM: $(cat "$work/server.log")"
    sleep 0.05
  done
  elapsed=$(( $(now_ms) - since ))
  status=0
  wait "$server_pid" || status=$?
  server_pid=
}

# 9. SIGTERM with an idle keep-alive connection: one request answered, the
# socket kept open; the server closes it (EOF) and exits 0 within grace + 2 s.
start_server --grace 2000
exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "connect for the idle connection"
printf 'GET /sub/note.txt HTTP/1.1\r\nHost: test\r\n\r\n' >&3
# The response: its head, then the 11-byte body (bounded reads).
got_head=
while IFS= read -r -t 5 line <&3; do
  got_head+="$line"$'\n'
  [[ $line == $'\r' ]] && break
done
[[ $got_head == 'HTTP/1.1 200'* ]] || fail "idle connection: no 200 response: $got_head"
grep -qi '^connection: keep-alive' <<< "$got_head" || fail "idle connection: not kept alive: $got_head"
read -r -t 5 -N 11 body <&3 || fail "idle connection: no body"
[[ $body == $'plain text\n' ]] || fail "idle connection: body '$body'"
t0=$(now_ms)
kill -TERM "$server_pid"
wait_exit 4000 "$t0"
[[ $status == 0 ]] || fail "SIGTERM (idle connection): exit status $status: $(cat "$work/server.log")"
# EOF on the idle socket: read returns nothing, at once (the server is gone).
if IFS= read -r -t 2 -N 1 rest <&3; then
  fail "idle connection: got '$rest' after shutdown, not EOF"
elif (( $? > 128 )); then
  fail "idle connection: no EOF after shutdown (read timed out)"
fi
exec 3<&-
grep -q 'Terminated: shutting down' "$work/server.log" || fail "no shutdown message: $(cat "$work/server.log")"
idle_ms=$elapsed

# 10. SIGTERM with a slow client (half a request head sent) and --grace 300:
# the connection is cut at the deadline and the server exits 0 soon after.
start_server --grace 300
exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "connect for the slow client"
printf 'GET /index.html HTTP/1.1\r\nHost: te' >&3
sleep 0.2                                          # the server has read it
t0=$(now_ms)
kill -TERM "$server_pid"
wait_exit 1500 "$t0"                               # 300 ms + slack
[[ $status == 0 ]] || fail "SIGTERM (slow client): exit status $status: $(cat "$work/server.log")"
(( elapsed >= 250 )) || fail "slow client: the server exited after $elapsed ms, before the 300 ms grace"
exec 3<&-

echo "http_server: all checks passed ($first_log; SIGTERM: idle connection ${idle_ms} ms, slow client ${elapsed} ms)"
