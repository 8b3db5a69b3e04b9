#!/bin/sh
# curl.sh: the banditd walkthrough with nothing but curl: create a study, ask for
# a trial, report one measurement per epoch up to the trial's budget, complete
# it, and read the study's best trial (the incumbent). Prints every request and
# every answer. The "training" is a made-up loss computed with awk.
#
#   clients/examples/curl.sh [URL] [TOKEN_FILE]
#   URL         default $BANDITD_URL or http://127.0.0.1:8080
#   TOKEN_FILE  default $BANDITD_TOKEN_FILE or ./banditd.db.admin-token
#   SCHEDULER   env, default hyperband (also: successive_halving, asha, random)
#   TRIALS      env, how many trials to run, default 12 (hyperband with eta 3 starts
#               9 trials at 1 epoch, then resumes the best 3 of them at 3 epochs)
set -eu

URL=${1:-${BANDITD_URL:-http://127.0.0.1:8080}}
TOKEN_FILE=${2:-${BANDITD_TOKEN_FILE:-./banditd.db.admin-token}}
SCHEDULER=${SCHEDULER:-hyperband}
TRIALS=${TRIALS:-12}
TOKEN=$(cat "$TOKEN_FILE")

# api METHOD PATH [JSON [IDEMPOTENCY_KEY]]: prints the request and the answer, leaves
# the body in $BODY, and stops the script on an answer that is not 2xx.
api() {
    echo "> $1 $2${4:+ (Idempotency-Key: $4)}${3:+ $3}"
    if [ $# -ge 3 ]; then
        out=$(curl -sS -X "$1" -w '\n%{http_code}' -H "Authorization: Bearer $TOKEN" \
                   -H 'Content-Type: application/json' ${4:+-H "Idempotency-Key: $4"} \
                   --data "$3" "$URL$2")
    else
        out=$(curl -sS -X "$1" -w '\n%{http_code}' -H "Authorization: Bearer $TOKEN" "$URL$2")
    fi
    CODE=$(printf '%s\n' "$out" | tail -n 1)
    BODY=$(printf '%s\n' "$out" | sed '$d')
    echo "< $CODE $BODY"
    echo
    case $CODE in
        2??) ;;
        *) echo "curl.sh: $1 $2 answered $CODE" >&2; exit 1 ;;
    esac
}

# field NAME: the first number after "NAME": in $BODY (enough for these answers).
field() {
    printf '%s' "$BODY" | grep -o "\"$1\":[-0-9.e+]*" | head -n 1 | cut -d: -f2
}

case $SCHEDULER in
    random) OPTIONS='{"max_trials": 20}' ;;
    asha) OPTIONS='{"eta": 3, "max_trials": 20}' ;;
    *) OPTIONS='{"eta": 3}' ;;
esac

echo "# 1. Is the daemon up? (no token needed)"
echo "> GET /healthz"
echo "< $(curl -sS "$URL/healthz")"
echo

echo "# 2. Create a study: two hyperparameters, epochs as the resource (1..9), $SCHEDULER."
api POST /v1/studies '{"name": "curl-walkthrough-'"$$"'",
  "parameters": [{"name": "lr", "type": "float", "low": 1e-5, "high": 1, "log": true},
                 {"name": "layers", "type": "int", "low": 1, "high": 8}],
  "objective": {"metric": "val_loss", "goal": "minimize"},
  "resource": {"name": "epochs", "min": 1, "max": 9, "integer": true},
  "scheduler": {"name": "'"$SCHEDULER"'", "options": '"$OPTIONS"'},
  "seed": 42}'
STUDY=$(field id)

n=0
asks=0
while [ "$n" -lt "$TRIALS" ]; do
    asks=$((asks + 1))
    echo "# 3. Ask for a trial. Sending the same Idempotency-Key again would return the same trial."
    api POST "/v1/studies/$STUDY/suggest" '{"worker": "curl", "count": 1}' "curl-$STUDY-$$-$asks"
    case $BODY in
        *'"done":true'*) echo "# the study is finished"; break ;;
        *retry_after_ms*) sleep 1; continue ;;
    esac
    n=$((n + 1))
    TRIAL=$(field id)
    LR=$(field lr)
    LAYERS=$(field layers)
    BUDGET=$(field budget)
    EPOCHS=${BUDGET%%.*}
    RESUME=$(printf '%s' "$BODY" | grep -o '"resume_from":[0-9]*' | cut -d: -f2)
    epoch=1
    if [ -n "$RESUME" ]; then
        echo "# Trial $TRIAL continues trial $RESUME (same config): a real worker loads its checkpoint."
        api GET "/v1/trials/$RESUME"
        DONE=$(field budget)
        epoch=$((${DONE%%.*} + 1))
    fi

    echo "# Train trial $TRIAL (lr=$LR layers=$LAYERS) from epoch $epoch to $EPOCHS, one measurement per epoch."
    loss=1
    while [ "$epoch" -le "$EPOCHS" ]; do
        loss=$(awk -v lr="$LR" -v l="$LAYERS" -v e="$epoch" \
                   'BEGIN { d = log(lr) / log(10) + 2.5; printf "%.4f", 0.05 * d * d + 0.02 * (l - 4) ^ 2 / 16 + 1 / (e + 1) }')
        api POST "/v1/trials/$TRIAL/measurements" '{"step": '"$epoch"', "value": '"$loss"'}'
        case $BODY in
            *'"stop"'*) echo "# the scheduler stopped trial $TRIAL"; break ;;
        esac
        epoch=$((epoch + 1))
    done
    case $BODY in
        *'"stop"'*) continue ;;
    esac

    echo "# Complete trial $TRIAL with its final validation loss."
    api POST "/v1/trials/$TRIAL/complete" '{"value": '"$loss"'}'
done

echo "# 4. The study: trial counts and the incumbent (best trial so far)."
api GET "/v1/studies/$STUDY"
printf '%s\n' "$BODY" | grep -o '"incumbent":{[^}]*}[^}]*}' || echo "(no incumbent yet)"
echo

echo "# 5. All trials of the study, 100 per page."
api GET "/v1/studies/$STUDY/trials?limit=100"
