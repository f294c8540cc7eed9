# The two commands of README: `make demo` and `make test`. Both set up first.
# `make fast` is the tier to run on every change (no root).
.PHONY: setup demo test fast clean bench-link bench-engine bench-files bench-wan fuzz

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/python -m braidlab demo

test:
	bash scripts/test.sh

fast:
	bash scripts/fast.sh

bench-link: setup
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
