#!/bin/sh
# user_cli_test: `cellgate user ...` end to end. usage: user_cli_test.sh CASE /path/to/cellgate
set -u
case_name=$1
cellgate=$2
dir=$(mktemp -d /tmp/cellgate-user-cli-XXXXXX)
trap 'rm -rf "$dir"' EXIT
data="$dir/data"
fails=0

fail() { echo "FAIL ($case_name): $*" >&2; fails=$((fails + 1)); }
# expect CODE CMD...: runs CMD with stdout in $dir/out and stderr in $dir/err, checks the exit code.
expect() {
  want=$1; shift
  "$@" >"$dir/out" 2>"$dir/err"
  got=$?
  [ "$got" -eq "$want" ] || fail "'$*' exited $got, expected $want; stderr: $(cat "$dir/err")"
}
is_token() { grep -Eqx '[0-9a-f]{64}' "$1"; }
lines() { wc -l <"$1" | tr -d ' '; }

case $case_name in
add_list)
  expect 0 "$cellgate" user add alice --data-dir "$data"
  is_token "$dir/out" || fail "add: stdout is not one token line: $(cat "$dir/out")"
  [ "$(lines "$dir/out")" = 1 ] || fail "add: stdout has more than the token"
  grep -q "shown only once" "$dir/err" || fail "add: no hint on stderr"
  token=$(cat "$dir/out")
  expect 0 "$cellgate" user add root --admin --memory 2G --cpus 0.5 --max-kernels 3 --exec-timeout 600 --data-dir "$data"
  expect 0 "$cellgate" user list --data-dir "$data"
  head -n1 "$dir/out" | grep -q '^NAME  *ADMIN  *MAX-KERNELS' || fail "list: no header: $(cat "$dir/out")"
  grep -Eq '^alice +no +- +- +- ' "$dir/out" || fail "list: alice row wrong: $(cat "$dir/out")"
  grep -Eq '^root +yes +3 +2G +0.5 +- +- +- +600 ' "$dir/out" || fail "list: root row wrong: $(cat "$dir/out")"
  [ "$(lines "$dir/out")" = 3 ] || fail "list: expected 3 lines"
  # Neither the token nor its hash is shown or stored in plain text anywhere in the data dir.
  hash=$(printf %s "$token" | sha256sum | cut -d' ' -f1)
  grep -q "$hash" "$dir/out" && fail "list shows a token hash"
  grep -rq "$token" "$data" && fail "the token is stored in plain text under $data"
  grep -q '"action":"user.add"' "$data/audit.log" || fail "no audit line for user.add"
  ;;
duplicate)
  expect 0 "$cellgate" user add alice --data-dir "$data"
  expect 1 "$cellgate" user add alice --data-dir "$data"
  [ -s "$dir/out" ] && fail "a failed add printed something on stdout"
  grep -qx "cellgate user: user 'alice' already exists" "$dir/err" || fail "duplicate: message: $(cat "$dir/err")"
  ;;
remove)
  expect 0 "$cellgate" user add alice --data-dir "$data"
  expect 0 "$cellgate" user add bob --data-dir "$data"
  expect 0 "$cellgate" user remove alice --data-dir "$data"
  expect 0 "$cellgate" user list --data-dir "$data"
  grep -q '^alice ' "$dir/out" && fail "alice still listed after remove"
  grep -q '^bob ' "$dir/out" || fail "bob lost by removing alice"
  expect 1 "$cellgate" user remove alice --data-dir "$data"
  grep -qx "cellgate user: no such user 'alice'" "$dir/err" || fail "remove missing: message: $(cat "$dir/err")"
  ;;
reset_token)
  expect 0 "$cellgate" user add alice --data-dir "$data"
  old=$(cat "$dir/out")
  expect 0 "$cellgate" user reset-token alice --data-dir "$data"
  is_token "$dir/out" || fail "reset-token: stdout is not one token line"
  [ "$(cat "$dir/out")" != "$old" ] || fail "reset-token printed the old token"
  expect 1 "$cellgate" user reset-token nobody --data-dir "$data"
  [ -s "$dir/out" ] && fail "a failed reset-token printed something on stdout"
  grep -q "reset_token" "$data/audit.log" || fail "no audit line for reset-token"
  ;;
set_limits)
  expect 0 "$cellgate" user add alice --memory 1G --pids 100 --data-dir "$data"
  expect 0 "$cellgate" user set-limits alice --cpus 2 --pids default --workspace-bytes 512M --data-dir "$data"
  expect 0 "$cellgate" user list --data-dir "$data"
  grep -Eq '^alice +no +- +1G +2 +- +512M ' "$dir/out" || fail "set-limits: row wrong: $(cat "$dir/out")"
  expect 2 "$cellgate" user set-limits alice --data-dir "$data"
  expect 2 "$cellgate" user set-limits alice --memory lots --data-dir "$data"
  expect 1 "$cellgate" user set-limits nobody --cpus 1 --data-dir "$data"
  ;;
usage)
  expect 2 "$cellgate" user
  expect 0 "$cellgate" user --help
  grep -q "reset-token NAME" "$dir/out" || fail "user --help lacks the commands"
  for sub in add list remove reset-token set-limits; do
    expect 0 "$cellgate" user "$sub" --help
    grep -q "^usage: cellgate user $sub" "$dir/out" || fail "$sub --help: $(cat "$dir/out")"
  done
  expect 2 "$cellgate" user frobnicate
  expect 2 "$cellgate" user add --data-dir "$data"
  expect 2 "$cellgate" user add 'bad/name' --data-dir "$data"
  [ "$(lines "$dir/err")" = 1 ] || fail "usage errors are one line: $(cat "$dir/err")"
  expect 2 "$cellgate" user add alice --bogus --data-dir "$data"
  expect 2 "$cellgate" user add alice --pids 0 --data-dir "$data"
  expect 2 "$cellgate" user add alice --memory 2X --data-dir "$data"
  expect 2 "$cellgate" user add alice --memory 0 --data-dir "$data"
  expect 2 "$cellgate" user add alice --data-dir
  expect 2 "$cellgate" user remove --admin alice --data-dir "$data"
  [ -e "$data" ] && fail "a usage error created the data dir"
  ;;
no_db)
  expect 1 "$cellgate" user list --data-dir "$dir/none"
  grep -q "no user database in $dir/none" "$dir/err" || fail "no_db: message: $(cat "$dir/err")"
  [ -e "$dir/none" ] && fail "list created a data dir"
  ;;
corrupt)
  mkdir -p "$data"
  head -c 8192 /dev/urandom >"$data/cellgate.db"
  expect 1 "$cellgate" user list --data-dir "$data"
  grep -q "cellgate.db.*not a database" "$dir/err" || fail "corrupt: message: $(cat "$dir/err")"
  [ "$(lines "$dir/err")" = 1 ] || fail "corrupt: not one line: $(cat "$dir/err")"
  ;;
data_dir_env)
  expect 0 env CELLGATE_DATA_DIR="$dir/env" "$cellgate" user add alice
  [ -f "$dir/env/cellgate.db" ] || fail "CELLGATE_DATA_DIR ignored"
  expect 0 env CELLGATE_DATA_DIR="$dir/env" "$cellgate" user add bob --data-dir "$dir/flag"
  [ -f "$dir/flag/cellgate.db" ] || fail "--data-dir does not win over CELLGATE_DATA_DIR"
  expect 0 env -u CELLGATE_DATA_DIR sh -c "cd '$dir' && exec '$cellgate' user add carol"
  [ -f "$dir/data/cellgate.db" ] || fail "the default ./data was not used"
  ;;
bad_database)
  expect 1 "$cellgate" user list --database mysql://x/y --data-dir "$data"
  [ "$(lines "$dir/err")" = 1 ] || fail "bad --database: more than one line: $(cat "$dir/err")"
  grep -q "^cellgate user: --database: expected postgresql://" "$dir/err" || fail "bad --database: $(cat "$dir/err")"
  expect 1 env CELLGATE_DATABASE="postgresql://nobody@/nodb?host=$dir" "$cellgate" user add alice --data-dir "$data"
  [ "$(lines "$dir/err")" = 1 ] || fail "unreachable database: more than one line: $(cat "$dir/err")"
  grep -q "nodb" "$dir/err" || fail "unreachable database: the message does not name it: $(cat "$dir/err")"
  [ -e "$data/cellgate.db" ] && fail "a SQLite file was made although --database named PostgreSQL"
  ;;
postgres)
  # Under ctest's postgres fixture: the same commands on a database of the run's server.
  admin=$(cat "$CELLGATE_TEST_PG_URL_FILE")
  db="cgcli_$$"
  psql -X -q "$admin" -c "CREATE DATABASE $db" || fail "cannot create $db"
  url=$(printf %s "$admin" | sed "s|/postgres?|/$db?|")
  expect 0 "$cellgate" user add alice --database "$url" --data-dir "$data"
  is_token "$dir/out" || fail "add: stdout is not one token line: $(cat "$dir/out")"
  token=$(cat "$dir/out")
  expect 0 env CELLGATE_DATABASE="$url" "$cellgate" user add root --admin --memory 2G --data-dir "$data"
  expect 0 "$cellgate" user list --database "$url" --data-dir "$data"
  grep -Eq '^alice +no ' "$dir/out" || fail "list: alice row wrong: $(cat "$dir/out")"
  grep -Eq '^root +yes +- +2G ' "$dir/out" || fail "list: root row wrong: $(cat "$dir/out")"
  [ -e "$data/cellgate.db" ] && fail "a SQLite file was made although --database named PostgreSQL"
  hash=$(printf %s "$token" | sha256sum | cut -d' ' -f1)
  [ "$(psql -X -At "$url" -c "SELECT count(*) FROM users WHERE token_hash = '$hash'")" = 1 ] || fail "no hash row"
  [ "$(psql -X -At "$url" -c "SELECT count(*) FROM audit_log WHERE action = 'user.add'")" = 2 ] || fail "no audit rows"
  grep -q '"action":"user.add"' "$data/audit.log" || fail "no audit line for user.add"
  expect 1 "$cellgate" user add alice --database "$url" --data-dir "$data"
  grep -qx "cellgate user: user 'alice' already exists" "$dir/err" || fail "duplicate: message: $(cat "$dir/err")"
  psql -X -q "$admin" -c "DROP DATABASE $db WITH (FORCE)" || fail "cannot drop $db"
  ;;
*)
  echo "unknown case $case_name" >&2
  exit 2
  ;;
esac
[ "$fails" -eq 0 ] && echo "ok $case_name"
exit "$fails"
