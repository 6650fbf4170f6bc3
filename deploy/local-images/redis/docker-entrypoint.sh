#!/bin/sh
# redis-server as the user redis; other containers on the network reach it (the official image's
# build turns protected mode off: with no password, Redis would refuse every address but loopback).
set -e
if [ "$1" = redis-server ]; then
  exec setpriv --reuid=redis --regid=redis --init-groups "$@" --protected-mode no
fi
exec "$@"
