#!/bin/sh
# notify-chat.sh -- a baton hook that posts the end of a run to a chat
# webhook, in the format of Slack's incoming webhooks (Mattermost and
# Rocket.Chat take it too): a line saying what happened, and the last lines
# of the run's output.
#
#   on_failure: ["/usr/local/lib/baton/notify-chat.sh"]
#   env: {CHAT_WEBHOOK_URL: "https://hooks.slack.com/services/..."}
#
# baton runs it after the run, on the node that ran it, once (after the last
# attempt when the job retries), with the facts in BATON_* variables and the
# run's output in the file BATON_OUTPUT_FILE; it needs only sh, sed, awk,
# tail and curl. Its own output and exit status go to baton's log
# (hook_output, hook_end); hook_timeout bounds it.
set -eu
: "${CHAT_WEBHOOK_URL:?set CHAT_WEBHOOK_URL in the job's env (or defaults: env)}"
LINES=${CHAT_OUTPUT_LINES:-20}

# Text as the inside of a JSON string: \ and " escaped, tabs as \t, carriage
# returns and other control characters dropped, lines joined with \n. baton
# already made the output valid UTF-8.
json_text() {
    tab=$(printf '\t')
    sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e "s/$tab/\\\\t/g" |
        tr -d '\000-\010\013-\037' |
        awk 'NR > 1 { printf "\\n" } { printf "%s", $0 }'
}

case ${BATON_OUTCOME:-} in
    ok) colour=good ;;
    *) colour=danger ;;
esac
if [ -n "${BATON_EXIT_CODE:-}" ]; then
    how="exit $BATON_EXIT_CODE"
elif [ -n "${BATON_SIGNAL:-}" ]; then
    how="signal $BATON_SIGNAL"
else
    how=${BATON_REASON:-did not start}
fi
summary="job $BATON_JOB: $BATON_OUTCOME ($how) on $BATON_NODE, attempt $BATON_ATTEMPT, ${BATON_DURATION_MS}ms, scheduled $BATON_SCHEDULED_AT"
tail_text=$(tail -n "$LINES" "$BATON_OUTPUT_FILE" | json_text)
text=$(printf '%s' "$summary" | json_text)

printf '{"text":"%s","attachments":[{"color":"%s","title":"%s","text":"%s","footer":"baton group %s, run %s"}]}' \
    "$text" "$colour" "last lines of output" "$tail_text" "$BATON_GROUP" "$BATON_RUN_ID" |
    curl -fsS --max-time 10 -o /dev/null -H 'Content-Type: application/json' --data-binary @- \
        "$CHAT_WEBHOOK_URL"
echo "posted to the chat: $summary"
