# The two commands of README: `make demo` and `make test`. Both set up first.
.PHONY: setup demo test clean bench-link

setup:
	bash scripts/setup.sh

demo: setup
	.venv/bin/python -m braidlab demo

test:
	bash scripts/test.sh

bench-link: setup
	.venv/bin/python benches/link.py

clean:
	.venv/bin/python -m braidlab clean
