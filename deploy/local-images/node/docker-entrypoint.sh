#!/bin/sh
# The official node image's: `docker run IMAGE --flag` or `docker run IMAGE script.js` runs node.
set -e
if [ "${1#-}" != "${1}" ] || [ -z "$(command -v "${1}")" ] || { [ -f "${1}" ] && ! [ -x "${1}" ]; }; then
  set -- node "$@"
fi
exec "$@"
