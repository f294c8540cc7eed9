# The two commands of README: `make demo` and `make test`. Both set up first.
# `make fast` is the tier to run on every change (no root).
.PHONY: setup demo test fast install deb clean bench-link bench-engine bench-files bench-wan fuzz

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/python -m braidlab demo

test:
	bash scripts/test.sh

fast:
	bash scripts/fast.sh

# Binaries, man pages and completions under $(DESTDIR)$(PREFIX), from the release build
# (make setup, or cargo build --release). No root needed for a DESTDIR of one's own.
PREFIX ?= /usr/local
install:
	cargo build --release --locked -p braid-cli -p braid-link
	install -Dm755 target/release/braid $(DESTDIR)$(PREFIX)/bin/braid
	install -Dm755 target/release/braid-link $(DESTDIR)$(PREFIX)/bin/braid-link
	target/release/braid manpages $(DESTDIR)$(PREFIX)/share/man/man1 >/dev/null
	install -d $(DESTDIR)$(PREFIX)/share/bash-completion/completions $(DESTDIR)$(PREFIX)/share/zsh/site-functions $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d
	target/release/braid completions bash > $(DESTDIR)$(PREFIX)/share/bash-completion/completions/braid
	target/release/braid completions zsh > $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_braid
	target/release/braid completions fish > $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/braid.fish

# A Debian package of the above and braid-serve.service: target/debian/braid_VERSION_ARCH.deb.
deb:
	bash scripts/deb.sh

bench-link: setup
	cargo build --release -p braid-traffic --example flood
	.venv/bin/python benches/link.py

bench-engine: setup
	.venv/bin/python benches/engine.py

bench-files: setup
	.venv/bin/python benches/files.py

bench-wan: setup
	.venv/bin/python benches/wan.py

# Under libFuzzer (nightly toolchain, cargo-fuzz): FUZZ_TARGET=decode (the frame
# decoder) or session (a server's whole session after a valid handshake).
FUZZ_SECONDS ?= 60
FUZZ_TARGET ?= session
fuzz:
	command -v cargo-fuzz >/dev/null || cargo install cargo-fuzz --locked
	cd fuzz && cargo +nightly fuzz run $(FUZZ_TARGET) -- -max_total_time=$(FUZZ_SECONDS)

clean:
	.venv/bin/python -m braidlab clean
