#!/usr/bin/env bash
# Makes, on this machine, the base images that the product's Dockerfile and docker-compose.yml name,
# for a machine that reaches Debian's packages and the npm registry but no image registry:
#   debian:bookworm-slim     debootstrap --variant=minbase from the machine's Debian mirror, slimmed as
#                            Docker's official slim image is (no docs, man pages or locales)
#   node:24-bookworm-slim    that base with Node 24 (the binary of the project's `node` devDependency),
#                            npm from the registry and the user node (uid 1000), so that the project's
#                            Dockerfile builds as it is
#   mediagate-local/postgres:15, mediagate-local/redis:7, mediagate-local/nginx:1.28
#                            stand-ins for the compose stack's images, from Debian's packages, used only
#                            through compose.override.yml beside this script
# The node stand-in (and what is built on it) trusts this machine's certificate authorities
# (/etc/ssl/certs/ca-certificates.crt): outgoing HTTPS here is re-signed by a local authority, and npm
# ci inside the build fails without it. The product's Dockerfile never copies it.
#
# Each image is tagged with a hash of its inputs (this script's recipe for it, its files, its parent,
# the Node binary, the npm version, the trust store): a second run finds them all and takes seconds.
# Usage: deploy/local-images/build.sh   (as root, with dockerd running; prints what it made)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
# npm as Node 24 bundles it (the stand-in's npm; Dockerfile's npm ci runs it).
NPM_VERSION=11.21.2
HOST_CA=/etc/ssl/certs/ca-certificates.crt
LOCAL=mediagate-local
work="$(mktemp -d /var/tmp/mediagate-local-images.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# The machine's Debian mirror, as apt here is configured (/etc/apt/sources.list*): containers fetch over http.
sources() { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null || true; }
DEBIAN_MIRROR="${DEBIAN_MIRROR:-$(sources | grep -oE 'http://[^ ]+/debian/?( |$)' | head -1 | tr -d ' ')}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
DEBIAN_MIRROR="${DEBIAN_MIRROR%/}"
DEBIAN_SECURITY="${DEBIAN_SECURITY:-$(sources | grep -oE 'http://[^ ]+/debian-security/?( |$)' | head -1 | tr -d ' ')}"
DEBIAN_SECURITY="${DEBIAN_SECURITY:-${DEBIAN_MIRROR}-security}"
DEBIAN_SECURITY="${DEBIAN_SECURITY%/}"

say() { printf '%s\n' "$*" >&2; }
hash_of() { sha256sum | cut -c1-16; }
exists() { docker image inspect "$1" >/dev/null 2>&1; }
image_id() { docker image inspect --format '{{.Id}}' "$1"; }
# A folder's files, names and contents, in a stable order.
files_hash() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | hash_of; }

# Tags `alias` to `tagged` and says whether it was made now or found.
made() {
  local tagged="$1" alias="$2" started="$3"
  docker tag "$tagged" "$alias"
  if [ "$started" = cached ]; then
    say "  cached  $alias  ($tagged)"
  else
    say "  made    $alias  ($tagged, $(($(date +%s) - started)) s)"
  fi
}

# Debian's apt sources for a suite, in the deb822 form Docker's official images use.
debian_sources() {
  local suite="$1"
  cat <<EOF
Types: deb
URIs: ${DEBIAN_MIRROR}
Suites: ${suite} ${suite}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: ${DEBIAN_SECURITY}
Suites: ${suite}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
}

# debootstrap a minimal Debian and slim it as debuerreotype does for debian:<suite>-slim: dpkg keeps no
# docs, man pages or locales (also for what is installed later), apt keeps no caches, services never
# start at install (policy-rc.d), then security updates.
debian_tree() {
  local suite="$1" dir="$2"
  debootstrap --variant=minbase "$suite" "$dir" "$DEBIAN_MIRROR" >"$work/debootstrap-$suite.log" 2>&1 || {
    tail -20 "$work/debootstrap-$suite.log" >&2
    return 1
  }
  cat >"$dir/etc/dpkg/dpkg.cfg.d/docker" <<'EOF'
# The "slim" variant: files that containers do not need are not installed (Docker's debian:*-slim).
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
EOF
  cat >"$dir/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
  printf 'Acquire::Languages "none";\n' >"$dir/etc/apt/apt.conf.d/docker-no-languages"
  printf 'Acquire::GzipIndexes "true";\n' >"$dir/etc/apt/apt.conf.d/docker-gzip-indexes"
  printf 'Apt::AutoRemove::SuggestsImportant "false";\n' >"$dir/etc/apt/apt.conf.d/docker-autoremove-suggests"
  printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
  chmod 755 "$dir/usr/sbin/policy-rc.d"
  rm -f "$dir/etc/apt/sources.list"
  debian_sources "$suite" >"$dir/etc/apt/sources.list.d/debian.sources"
  rm -rf "$dir"/usr/share/{man,info,groff,linda,lintian,locale}/* "$dir"/var/lib/apt/lists/* "$dir"/var/cache/apt/*.bin \
    "$dir"/var/cache/apt/archives/*.deb "$dir"/var/log/*.log "$dir"/var/log/apt/* "$dir"/etc/machine-id "$dir"/etc/hostname
  find "$dir/usr/share/doc" -mindepth 1 -not -type d -not -name copyright -delete
  find "$dir/usr/share/doc" -mindepth 1 -type d -empty -delete
  : >"$dir/etc/machine-id"
}

# debian:<suite>-slim, from debootstrap; upgraded from <suite>-updates and -security in a build step.
make_debian() {
  local suite="$1" tag key started dir
  key="$( (declare -f make_debian debian_tree debian_sources; echo "$suite $DEBIAN_MIRROR $DEBIAN_SECURITY") | hash_of)"
  tag="$LOCAL/debian:$suite-slim-$key"
  if exists "$tag"; then
    made "$tag" "debian:$suite-slim" cached
    return
  fi
  started=$(date +%s)
  dir="$work/rootfs-$suite"
  debian_tree "$suite" "$dir"
  tar -C "$dir" --numeric-owner -c . | docker import --change 'CMD ["bash"]' - "$tag.imported" >/dev/null
  rm -rf "$dir"
  printf 'FROM %s\nRUN apt-get update && apt-get -y upgrade && rm -rf /var/lib/apt/lists/*\nCMD ["bash"]\n' "$tag.imported" |
    docker build -q -t "$tag" - >/dev/null
  docker rmi "$tag.imported" >/dev/null
  made "$tag" "debian:$suite-slim" "$started"
}

# A `docker build` of deploy/local-images/<name>/ on `parent` (build argument BASE), with `extra` files
# (already in $work/ctx-<name>) and `inputs` in its hash.
make_image() {
  local name="$1" alias="$2" parent="$3" inputs="${4:-}" ctx="$work/ctx-$1" key tag started
  mkdir -p "$ctx"
  cp -a "$here/$name/." "$ctx/"
  key="$( (image_id "$parent"; echo "$inputs"; files_hash "$ctx") | hash_of)"
  tag="$LOCAL/$name:$key"
  if exists "$tag"; then
    made "$tag" "$alias" cached
    return
  fi
  started=$(date +%s)
  if ! docker build --build-arg "BASE=$parent" -t "$tag" "$ctx" >"$work/build-$name.log" 2>&1; then
    tail -30 "$work/build-$name.log" >&2
    return 1
  fi
  made "$tag" "$alias" "$started"
}

# The node stand-in's files: the Node binary the project's devDependency installed, npm's package
# from the registry (kept between runs), this machine's trust store.
node_context() {
  local ctx="$work/ctx-node" cache="${XDG_CACHE_HOME:-$HOME/.cache}/mediagate-local-images"
  local binary="$root/node_modules/node/bin/node"
  if [ ! -x "$binary" ]; then
    say "no $binary: run npm install in $root first (the devDependency node@24 brings it)"
    return 1
  fi
  mkdir -p "$ctx" "$cache"
  cp -L "$binary" "$ctx/node"
  if [ ! -s "$cache/npm-$NPM_VERSION.tgz" ]; then
    (cd "$cache" && npm pack "npm@$NPM_VERSION" --silent >/dev/null)
  fi
  cp "$cache/npm-$NPM_VERSION.tgz" "$ctx/npm.tgz"
  cp "$HOST_CA" "$ctx/host-ca.crt"
}

command -v docker >/dev/null || {
  say 'docker is not installed'
  exit 1
}
docker info >/dev/null 2>&1 || {
  say 'no Docker engine answers (start dockerd)'
  exit 1
}
say "local base images (Debian from $DEBIAN_MIRROR):"
make_debian bookworm
node_context
make_image node node:24-bookworm-slim debian:bookworm-slim
make_image postgres "$LOCAL/postgres:15" debian:bookworm-slim
make_image redis "$LOCAL/redis:7" debian:bookworm-slim
make_image nginx "$LOCAL/nginx:1.28" debian:bookworm-slim
