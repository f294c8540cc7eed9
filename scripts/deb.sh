#!/usr/bin/env bash
# Builds target/debian/braid_VERSION_ARCH.deb from the release build: braid and
# braid-link, their man pages and completions, and braid-serve.service (not
# enabled: it needs /etc/braid/token first). dpkg-deb only; no other tool.
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(dpkg --print-architecture)
stage=target/debian/stage
rm -rf "$stage"
make --no-print-directory install DESTDIR="$stage" PREFIX=/usr >/dev/null
# Debian's places: zsh's vendor completions, gzipped man pages.
mkdir -p "$stage/usr/share/zsh/vendor-completions"
mv "$stage/usr/share/zsh/site-functions/_braid" "$stage/usr/share/zsh/vendor-completions/_braid"
rmdir "$stage/usr/share/zsh/site-functions"
gzip -9n "$stage"/usr/share/man/man1/*.1
install -Dm644 packaging/braid-serve.service "$stage/lib/systemd/system/braid-serve.service"
install -Dm644 packaging/braid-serve.default "$stage/etc/default/braid-serve"
install -Dm644 LICENSE-MIT "$stage/usr/share/doc/braid/LICENSE-MIT"
install -Dm644 LICENSE-APACHE "$stage/usr/share/doc/braid/LICENSE-APACHE"
install -Dm644 README.md "$stage/usr/share/doc/braid/README.md"
mkdir -p "$stage/DEBIAN"
echo /etc/default/braid-serve > "$stage/DEBIAN/conffiles"
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
# The shared libraries' packages, as dpkg-shlibdeps finds them (it reads a
# debian/control: a minimal one in a scratch directory).
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/debian"
printf 'Source: braid\n\nPackage: braid\nArchitecture: any\n' > "$scratch/debian/control"
top=$PWD
depends=$(cd "$scratch" && dpkg-shlibdeps -O -e "$top/$stage/usr/bin/braid" -e "$top/$stage/usr/bin/braid-link" 2>/dev/null \
  | sed -n 's/^shlibs:Depends=//p')
cat > "$stage/DEBIAN/control" <<CONTROL
Package: braid
Version: $version
Architecture: $arch
Maintainer: The braid developers <braid@localhost>
Installed-Size: $size
Depends: $depends
Section: net
Priority: optional
Description: parallel TCP transfers that keep their speed and give back the fairness
 braid moves bulk data over long, lossy paths on parallel TCP streams: on an
 idle path the streams fill it, on a busy one the group takes no more than one
 ordinary TCP flow would. Sessions are sealed (AEAD) and every file is verified
 end to end with BLAKE3. Includes braid-link, a user-space bottleneck emulator.
CONTROL
out="target/debian/braid_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$stage" "$out" >/dev/null
echo "$out"
