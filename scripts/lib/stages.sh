# Sourced by the scripts: named stages with their wall-clock seconds, and a table of them printed
# when the script exits (passed or failed), so growth shows in every run's log.
#   step "name"       ends the running stage and starts the next
#   on_exit 'cmd'     runs cmd at exit, after the table (the broker's stop, say)
#   keep_going cmd…   runs cmd; if it fails, the stage is marked FAILED and the script goes on,
#                     exiting 1 at the end (for runs of hours, where one failure should not cost
#                     the results of every stage after it)
STAGE_NAMES=()
STAGE_SECS=()
STAGE_NAME=""
STAGE_START=$SECONDS
STAGES_T0=$SECONDS
EXIT_HOOKS=()
STAGES_FAILED=()

stage_end() {
  if [ -n "$STAGE_NAME" ]; then
    STAGE_NAMES+=("$STAGE_NAME")
    STAGE_SECS+=("$((SECONDS - STAGE_START))")
    STAGE_NAME=""
  fi
}

step() {
  stage_end
  STAGE_NAME="$*"
  STAGE_START=$SECONDS
  printf '\n==> %s\n' "$*"
}

on_exit() { EXIT_HOOKS+=("$1"); }

keep_going() {
  local rc=0
  "$@" || rc=$?
  if [ "$rc" != 0 ]; then
    printf '\n==> FAILED (exit %s): %s; going on with the next stage\n' "$rc" "$STAGE_NAME"
    STAGES_FAILED+=("$STAGE_NAME")
  fi
}

stage_failed() { # stage_failed NAME: 0 if keep_going saw NAME fail
  local f
  for f in "${STAGES_FAILED[@]}"; do [ "$f" = "$1" ] && return 0; done
  return 1
}

stages_report() {
  local rc=$? i total=$((SECONDS - STAGES_T0)) status="passed"
  stage_end
  if [ "$rc" = 0 ] && [ "${#STAGES_FAILED[@]}" -gt 0 ]; then
    rc=1
    status="FAILED: ${#STAGES_FAILED[@]} stage(s), marked"
  elif [ "$rc" != 0 ]; then
    status="FAILED (exit $rc) in the last stage"
  fi
  if [ "${#STAGE_NAMES[@]}" -gt 0 ]; then
    printf '\n==> where the time went (%s)\n' "$status"
    printf '%7s  %s\n' seconds stage
    for i in "${!STAGE_NAMES[@]}"; do
      if stage_failed "${STAGE_NAMES[$i]}"; then
        printf '%7d  FAILED  %s\n' "${STAGE_SECS[$i]}" "${STAGE_NAMES[$i]:0:102}"
      else
        printf '%7d  %s\n' "${STAGE_SECS[$i]}" "${STAGE_NAMES[$i]:0:110}"
      fi
    done
    printf '%7d  %s\n' "$total" "total ($((total / 60)) min $((total % 60)) s)"
  fi
  for i in "${!EXIT_HOOKS[@]}"; do eval "${EXIT_HOOKS[$i]}" || true; done
  exit "$rc"
}
trap stages_report EXIT
