# Sourced by the scripts: named stages with their wall-clock seconds, and a table of them printed
# when the script exits (passed or failed), so growth shows in every run's log.
#   step "name"       ends the running stage and starts the next
#   on_exit 'cmd'     runs cmd at exit, after the table (the broker's stop, say)
STAGE_NAMES=()
STAGE_SECS=()
STAGE_NAME=""
STAGE_START=$SECONDS
STAGES_T0=$SECONDS
EXIT_HOOKS=()

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

stages_report() {
  local rc=$? i total=$((SECONDS - STAGES_T0)) status="passed"
  [ "$rc" = 0 ] || status="FAILED (exit $rc) in the last stage"
  stage_end
  if [ "${#STAGE_NAMES[@]}" -gt 0 ]; then
    printf '\n==> where the time went (%s)\n' "$status"
    printf '%7s  %s\n' seconds stage
    for i in "${!STAGE_NAMES[@]}"; do
      printf '%7d  %s\n' "${STAGE_SECS[$i]}" "${STAGE_NAMES[$i]:0:110}"
    done
    printf '%7d  %s\n' "$total" "total ($((total / 60)) min $((total % 60)) s)"
  fi
  for i in "${!EXIT_HOOKS[@]}"; do eval "${EXIT_HOOKS[$i]}" || true; done
  return "$rc"
}
trap stages_report EXIT
