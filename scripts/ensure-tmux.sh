#!/usr/bin/env bash
# Makes sure tmux is installed: the CLI's terminal test drives `switchboard
# chat` in a tmux pane. Installs Debian's package when it is missing, as
# ensure-postgres.sh does for PostgreSQL (the distribution release pins it).
set -euo pipefail

if command -v tmux >/dev/null 2>&1; then
  exit 0
fi
echo "ensure-tmux: installing tmux"
export DEBIAN_FRONTEND=noninteractive
if [ "$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq tmux >/dev/null
tmux -V
