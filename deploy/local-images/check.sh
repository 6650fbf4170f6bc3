#!/usr/bin/env bash
# npm run test:image: the product's Dockerfile built as it is, then the image alone and the compose
# stack run and asked over HTTP (test/image/*.image.ts), on a machine with no image registry:
#   1. docker.io, docker-compose and debootstrap from Debian if missing; dockerd started if none answers;
#   2. the base images made here (build.sh beside this file; cached);
#   3. docker build of the Dockerfile, tagged mediagate-local/product:check (its layers are the next
#      run's cache; the previous run's image is removed when this one differs);
#   4. the checks (jest --config jest.image.config.js), which clean up what they start;
#   5. the image's size and the largest folders in its node_modules.
# Run as root. The whole run's time is printed at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Node 24 (the devDependency) for jest, whatever Node the machine has.
export PATH="$PWD/node_modules/.bin:$PATH"
started=$(date +%s)
IMAGE=mediagate-local/product:check
logs="$(mktemp -d /var/tmp/mediagate-image-check.XXXXXX)"
trap 'rm -rf "$logs"' EXIT

echo "== docker"
export DEBIAN_FRONTEND=noninteractive
missing=()
command -v dockerd >/dev/null || missing+=(docker.io)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v debootstrap >/dev/null || missing+=(debootstrap)
command -v curl >/dev/null || missing+=(curl)
command -v flite >/dev/null || missing+=(flite)
command -v ffmpeg >/dev/null || missing+=(ffmpeg)
command -v psql >/dev/null || missing+=(postgresql-client)
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
  echo "starting dockerd (log: /var/log/mediagate-dockerd.log)"
  setsid -f dockerd >>/var/log/mediagate-dockerd.log 2>&1 </dev/null
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 1
  done
  docker info >/dev/null 2>&1 || {
    tail -30 /var/log/mediagate-dockerd.log
    echo 'dockerd did not answer within 60 s'
    exit 1
  }
fi
echo "$(docker version --format 'engine {{.Server.Version}}, client {{.Client.Version}}'); $(docker-compose version --short 2>/dev/null | sed 's/^/compose /')"

echo "== base images"
deploy/local-images/build.sh

echo "== docker build (the Dockerfile as it is)"
# Builds `tag` (a stage with --target, else the image) and removes what the previous run's build
# under that tag left and this one no longer uses: its layers are the next run's cache, nothing more.
build() {
  local tag="$1" previous current
  shift
  previous="$(docker image inspect --format '{{.Id}}' "$tag" 2>/dev/null || true)"
  if ! docker build --force-rm "$@" -t "$tag" . >>"$logs/build.log" 2>&1; then
    tail -60 "$logs/build.log"
    echo "docker build failed (above: the end of its output)"
    exit 1
  fi
  current="$(docker image inspect --format '{{.Id}}' "$tag")"
  if [ -n "$previous" ] && [ "$previous" != "$current" ]; then
    docker rmi "$previous" >/dev/null 2>&1 || true
  fi
}
build_started=$(date +%s)
# The build stages are tagged too, so that their old outputs are removed like the image's.
build "$IMAGE-build-stage" --target build
build "$IMAGE-deps-stage" --target deps
build "$IMAGE"
echo "built $IMAGE in $(($(date +%s) - build_started)) s ($(grep -c 'Using cache' "$logs/build.log" || true) steps from the cache)"

echo "== the image alone and the compose stack"
status=0
MEDIAGATE_IMAGE="$IMAGE" NODE_OPTIONS="--experimental-vm-modules --no-warnings" \
  npx jest --config jest.image.config.js --runInBand || status=$?

echo "== the image"
docker image inspect --format 'size: {{.Size}} bytes' "$IMAGE" | awk '{ printf "%s %.0f MB\n", $1, $2 / 1000000 }'
docker run --rm --entrypoint sh "$IMAGE" -c '
  echo "node_modules: $(du -sm /app/node_modules | cut -f1) MB; the largest folders in it (MB):"
  cd /app/node_modules && (du -sm -- @*/*; du -sm -- [!@]*) 2>/dev/null | sort -rn | head -15
  echo "the largest folders in /usr (MB):"
  du -sm /usr/lib/x86_64-linux-gnu /usr/share/* /usr/lib/* /usr/local/* 2>/dev/null | sort -rn | head -8'
echo "test:image took $(($(date +%s) - started)) s"
exit "$status"
